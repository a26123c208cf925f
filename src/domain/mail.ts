import type { Logger } from 'pino';
import type { Transporter } from 'nodemailer';
import type { Config } from '../kit/config.js';
import type { Db, Queryable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { sql } from '../store/sql.js';

export interface OutgoingMail {
  companyId: string;
  kind: string;
  recipient: string;
  subject: string;
  body: string;
}

/**
 * Transactional outbox: mail is written in the same transaction as the change that causes it,
 * so a rolled-back change sends nothing and a committed one is never lost. With SMTP_URL set,
 * queued mail is delivered after commit and retried on a timer; without it, it stays stored.
 */
export interface Mailer {
  queue(tx: Queryable, mail: OutgoingMail): Promise<string>;
  /** Delivers what is queued; resolves to the number sent. A no-op without SMTP. */
  flush(): Promise<number>;
  /** Starts a flush in the background (after a commit). */
  kick(): void;
  stop(): Promise<void>;
}

const MAX_ATTEMPTS = 5;
/** How often queued mail is sent again while SMTP_URL is set. */
export const MAIL_RETRY_INTERVAL_MS = 30_000;

export function createMailer(db: Db, config: Config, logger: Logger): Mailer {
  let transport: Transporter | undefined;
  let running: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function getTransport() {
    if (!transport) {
      const nodemailer = await import('nodemailer');
      transport = nodemailer.createTransport(config.smtpUrl);
    }
    return transport;
  }

  async function deliverOne(): Promise<boolean> {
    return db.transaction(async (tx) => {
      const [mail] = await tx.query<{ id: string; recipient: string; subject: string; body: string; attempts: number }>(sql`
        SELECT id, recipient, subject, body, attempts FROM outbox
        WHERE status = 'queued' ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`);
      if (!mail) return false;
      try {
        await (await getTransport()).sendMail({ from: config.mailFrom, to: mail.recipient, subject: mail.subject, text: mail.body });
        await tx.query(sql`UPDATE outbox SET status = 'sent', sent_at = now(), attempts = attempts + 1 WHERE id = ${mail.id}`);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const status = mail.attempts + 1 >= MAX_ATTEMPTS ? 'failed' : 'queued';
        await tx.query(sql`UPDATE outbox SET status = ${status}, attempts = attempts + 1, last_error = ${message} WHERE id = ${mail.id}`);
        logger.warn({ outboxId: mail.id, err: message }, 'mail delivery failed');
        throw new DeliveryPaused();
      }
      return true;
    });
  }

  async function flushAll(): Promise<number> {
    let sent = 0;
    try {
      while (await deliverOne()) sent++;
    } catch (error) {
      if (!(error instanceof DeliveryPaused)) logger.error({ err: error }, 'mail outbox flush failed');
    }
    return sent;
  }

  const flush = async () => {
    if (!config.smtpUrl) return 0;
    if (running) await running.catch(() => 0);
    running = flushAll();
    try {
      return await running;
    } finally {
      running = undefined;
    }
  };

  if (config.smtpUrl) {
    timer = setInterval(() => void flush(), MAIL_RETRY_INTERVAL_MS);
    timer.unref();
  }

  return {
    async queue(tx, mail) {
      const id = newId('mail');
      await tx.query(sql`INSERT INTO outbox (id, company_id, kind, recipient, subject, body)
        VALUES (${id}, ${mail.companyId}, ${mail.kind}, ${mail.recipient}, ${mail.subject}, ${mail.body})`);
      return id;
    },
    flush,
    kick() {
      void flush();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running?.catch(() => 0);
      transport?.close();
    },
  };
}

/** Stops a flush after a failed send; the message stays queued for the retry timer. */
class DeliveryPaused extends Error {}
