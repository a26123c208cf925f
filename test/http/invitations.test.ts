import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseUrlOf } from '../../src/kit/config.js';
import { INVITATION_SUBJECT } from '../../src/domain/employees.js';
import { sql } from '../../src/store/sql.js';
import { backends, client, startTestApp, type TestApp } from '../helpers/harness.js';

interface ReceivedMail {
  to: string[];
  raw: string;
}

/** A real SMTP server on a random local port that keeps every message it receives. */
async function startSmtp() {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return { received, url: `smtp://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(resolve)) };
}

/** The text of a message, undoing quoted-printable soft breaks and escapes. */
function bodyOf(raw: string): string {
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  return body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

async function outboxFor(t: TestApp, recipient: string) {
  return t.core.db.query<{ status: string; kind: string; body: string }>(
    sql`SELECT status, kind, body FROM outbox WHERE recipient = ${recipient}`,
  );
}

describe.each(backends())('employee invitations [%s]', (backend) => {
  describe('with SMTP configured', () => {
    let t: TestApp;
    let smtp: Awaited<ReturnType<typeof startSmtp>>;
    beforeAll(async () => {
      smtp = await startSmtp();
      t = await startTestApp(backend, { config: { smtpUrl: smtp.url, publicBaseUrl: 'https://devices.example.test' } });
    });
    afterAll(async () => {
      await t.close();
      await smtp.close();
    });

    it('emails the invitation after commit and returns no URL', async () => {
      const res = await client(t.app, t.demo.apiKeys.admin).post('/v4/employees', {
        companyId: t.demo.companies.acme,
        displayName: 'Ivy Invited',
        email: 'ivy@acme.example',
        sendInvitation: true,
      });
      expect(res.status).toBe(201);
      expect(res.body.data.invitationQueued).toBe(true);
      expect(JSON.stringify(res.body)).not.toMatch(/https?:\/\//);

      await t.core.mailer.flush();
      const mails = smtp.received.filter((m) => m.to.includes('ivy@acme.example'));
      expect(mails).toHaveLength(1);
      const mail = mails[0]!;
      expect(mail.raw).toContain(`Subject: ${INVITATION_SUBJECT}`);
      const body = bodyOf(mail.raw);
      expect(body).toContain('https://devices.example.test');
      expect(body).toContain(baseUrlOf(t.core.config));
      expect(body).toContain('Device Lifecycle dashboard');
      expect(body).toContain('ivy@acme.example');
      expect(await outboxFor(t, 'ivy@acme.example')).toMatchObject([{ status: 'sent', kind: 'employee_invitation' }]);
    });

    it('sends nothing when sendInvitation is absent or false', async () => {
      const api = client(t.app, t.demo.apiKeys.admin);
      const res = await api.post('/v4/employees', { companyId: t.demo.companies.acme, displayName: 'Quiet', email: 'quiet@acme.example', sendInvitation: false });
      expect(res.body.data.invitationQueued).toBe(false);
      await t.core.mailer.flush();
      expect(smtp.received.filter((m) => m.to.includes('quiet@acme.example'))).toHaveLength(0);
      expect(await outboxFor(t, 'quiet@acme.example')).toHaveLength(0);
    });
  });

  describe('without SMTP', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp(backend);
    });
    afterAll(() => t.close());

    it('keeps the invitation queued in the outbox', async () => {
      const res = await client(t.app, t.demo.apiKeys.admin).post('/v4/employees', {
        companyId: t.demo.companies.acme,
        displayName: 'Olga Outbox',
        email: 'olga@acme.example',
        sendInvitation: true,
      });
      expect(res.status).toBe(201);
      expect(res.body.data.invitationQueued).toBe(true);
      expect(await t.core.mailer.flush()).toBe(0);
      const [row] = await outboxFor(t, 'olga@acme.example');
      expect(row).toMatchObject({ status: 'queued', kind: 'employee_invitation' });
      expect(row!.body).toContain(baseUrlOf(t.core.config));
    });

    it('queues nothing when the create fails', async () => {
      const api = client(t.app, t.demo.apiKeys.admin);
      const duplicate = await api.post('/v4/employees', {
        companyId: t.demo.companies.acme,
        displayName: 'Eve Again',
        email: 'Eve@acme.example',
        sendInvitation: true,
      });
      expect(duplicate.status).toBe(409);
      const outOfScope = await client(t.app, t.demo.apiKeys.manager).post('/v4/employees', {
        displayName: 'Far Away',
        email: 'far@acme.example',
        country: 'US',
        sendInvitation: true,
      });
      expect(outOfScope.status).toBe(403);
      const [count] = await t.core.db.query<{ n: number }>(
        sql`SELECT count(*) AS n FROM outbox WHERE lower(recipient) IN ('eve@acme.example', 'far@acme.example')`,
      );
      expect(count?.n).toBe(0);
    });
  });
});
