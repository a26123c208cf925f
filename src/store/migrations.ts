import { raw, sql } from './sql.js';
import type { Db, Queryable } from './db.js';

/**
 * Ordered schema migrations. Applied once each, inside a transaction, under an advisory lock
 * so that several instances starting together on one PostgreSQL do not race.
 * Never edit a shipped migration: add a new one.
 */
/** The trigram indexes of migration 0012. */
const TRIGRAM_INDEXES = [
  'employees_name_trgm_idx',
  'employees_email_trgm_idx',
  'teams_name_trgm_idx',
  'company_addresses_alias_trgm_idx',
  'company_addresses_city_trgm_idx',
  'devices_serial_trgm_idx',
  'devices_make_model_trgm_idx',
  'orders_id_trgm_idx',
];

export const MIGRATIONS: ReadonlyArray<{ id: string; up: string }> = [
  {
    id: '0001_core',
    up: `
CREATE TABLE companies (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id text PRIMARY KEY,
  email text NOT NULL,
  display_name text NOT NULL,
  role text NOT NULL CHECK (role IN ('admin', 'manager', 'employee')),
  employee_id text,
  non_personal boolean NOT NULL DEFAULT false,
  disabled_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE user_companies (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  company_id text NOT NULL REFERENCES companies (id),
  PRIMARY KEY (user_id, company_id)
);

CREATE TABLE teams (
  id text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies (id),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX teams_company_name_key ON teams (company_id, lower(name));

CREATE TABLE manager_teams (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  PRIMARY KEY (user_id, team_id)
);

CREATE TABLE manager_regions (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  country text NOT NULL,
  PRIMARY KEY (user_id, country)
);

CREATE TABLE employees (
  id text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies (id),
  display_name text NOT NULL,
  email text NOT NULL,
  personal_email text,
  country text,
  job_title text,
  department text,
  division text,
  tax_id text,
  team_id text REFERENCES teams (id),
  address_one text,
  address_two text,
  city text,
  state text,
  zip_code text,
  phone text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX employees_company_email_key ON employees (company_id, lower(email));
CREATE INDEX employees_team_idx ON employees (team_id, id);
CREATE INDEX employees_country_idx ON employees (country, id);

ALTER TABLE users ADD CONSTRAINT users_employee_fk FOREIGN KEY (employee_id) REFERENCES employees (id);

CREATE TABLE company_addresses (
  id text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies (id),
  alias text NOT NULL,
  address text NOT NULL,
  city text NOT NULL,
  zip_code text NOT NULL,
  country text NOT NULL,
  contact_name text NOT NULL,
  contact_email text NOT NULL,
  phone text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX company_addresses_alias_key ON company_addresses (company_id, lower(alias));

CREATE TABLE devices (
  id text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies (id),
  serial_number text NOT NULL,
  product_type text NOT NULL,
  category text NOT NULL,
  manufacturer text NOT NULL,
  model text NOT NULL,
  specs jsonb NOT NULL DEFAULT '{}',
  spec_score integer NOT NULL DEFAULT 0,
  condition text NOT NULL,
  status text NOT NULL,
  country text,
  company_address_id text REFERENCES company_addresses (id),
  employee_id text REFERENCES employees (id),
  assigned_at timestamptz,
  pin_ciphertext text,
  pin_set_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX devices_company_serial_key ON devices (company_id, serial_number);
CREATE INDEX devices_employee_idx ON devices (employee_id, id);
CREATE INDEX devices_type_status_idx ON devices (company_id, product_type, status);

CREATE TABLE catalog_items (
  id text PRIMARY KEY,
  name text NOT NULL,
  manufacturer text NOT NULL,
  product_type text NOT NULL,
  category text NOT NULL,
  specs jsonb NOT NULL DEFAULT '{}',
  spec_score integer NOT NULL DEFAULT 0,
  price numeric(12, 2) NOT NULL,
  currency text NOT NULL
);

CREATE TABLE catalog_availability (
  item_id text NOT NULL REFERENCES catalog_items (id) ON DELETE CASCADE,
  country text NOT NULL,
  stock integer NOT NULL,
  lead_time_days integer NOT NULL,
  PRIMARY KEY (item_id, country)
);
CREATE INDEX catalog_availability_country_idx ON catalog_availability (country);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  secret_hash text NOT NULL,
  capabilities text[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_user_idx ON api_keys (user_id);

CREATE TABLE outbox (
  id text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies (id),
  kind text NOT NULL,
  recipient text NOT NULL,
  subject text NOT NULL,
  body text NOT NULL,
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz
);
CREATE INDEX outbox_queued_idx ON outbox (created_at) WHERE status = 'queued';
`,
  },
  {
    // Company-led keys: lists filter by company and page by id, and counts can stay in the index.
    id: '0002_company_list_indexes',
    up: `
CREATE INDEX employees_company_id_idx ON employees (company_id, id);
CREATE INDEX devices_company_id_idx ON devices (company_id, id);
`,
  },
  {
    id: '0003_orders',
    up: `
CREATE TABLE orders (
  id text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies (id),
  order_type text NOT NULL,
  status text NOT NULL,
  employee_id text REFERENCES employees (id),
  parent_id text REFERENCES orders (id),
  country text,
  dispositions jsonb,
  legal_hold jsonb,
  pickup_window jsonb,
  items jsonb,
  created_by text REFERENCES users (id),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  closed_at timestamptz
);
CREATE INDEX orders_company_id_idx ON orders (company_id, id);
CREATE INDEX orders_employee_idx ON orders (employee_id, id);
CREATE INDEX orders_parent_idx ON orders (parent_id);
CREATE INDEX orders_status_idx ON orders (company_id, lower(status), id);

CREATE TABLE order_devices (
  order_id text NOT NULL REFERENCES orders (id),
  device_id text NOT NULL REFERENCES devices (id),
  role text NOT NULL,
  status text NOT NULL,
  PRIMARY KEY (order_id, device_id)
);
CREATE INDEX order_devices_device_idx ON order_devices (device_id);

CREATE TABLE device_holds (
  device_id text PRIMARY KEY REFERENCES devices (id),
  order_id text NOT NULL REFERENCES orders (id)
);

CREATE TABLE order_events (
  id text PRIMARY KEY,
  order_id text NOT NULL REFERENCES orders (id),
  type text NOT NULL,
  status_from text,
  status_to text,
  device_id text REFERENCES devices (id),
  reason text,
  note text,
  source text NOT NULL,
  occurred_at timestamptz NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  data jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX order_events_order_idx ON order_events (order_id, occurred_at, id);

CREATE TABLE shipments (
  id text PRIMARY KEY,
  order_id text NOT NULL REFERENCES orders (id),
  carrier text NOT NULL,
  tracking_number text NOT NULL,
  direction text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX shipments_order_idx ON shipments (order_id);
`,
  },
  {
    // list_orders pages on (sort column, id) within a company; newest first is the default.
    id: '0004_order_list_indexes',
    up: `
CREATE INDEX orders_company_created_idx ON orders (company_id, created_at, id);
CREATE INDEX orders_company_updated_idx ON orders (company_id, updated_at, id);
-- Callers spanning several companies (admins) page in time order across them.
CREATE INDEX orders_created_idx ON orders (created_at, id);
CREATE INDEX orders_updated_idx ON orders (updated_at, id);
`,
  },
  {
    // v2 keys registered in the gateway; only a hash of the key is kept. The bridge v4 key is sealed
    // under the secret key because the gateway must send it on every translated call.
    id: '0005_legacy_keys',
    up: `
CREATE TABLE legacy_keys (
  id text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies (id),
  name text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  key_hint text NOT NULL,
  scopes text[] NOT NULL,
  bridge_user_id text NOT NULL REFERENCES users (id),
  bridge_key_id text REFERENCES api_keys (id),
  bridge_key_ciphertext text,
  created_at timestamptz NOT NULL DEFAULT now(),
  disabled_at timestamptz,
  last_used_at timestamptz,
  CHECK ((bridge_key_id IS NULL) = (bridge_key_ciphertext IS NULL))
);
CREATE INDEX legacy_keys_company_idx ON legacy_keys (company_id, created_at, id);

CREATE TABLE legacy_key_usage (
  legacy_key_id text NOT NULL REFERENCES legacy_keys (id) ON DELETE CASCADE,
  day date NOT NULL,
  endpoint text NOT NULL,
  scope text NOT NULL,
  calls integer NOT NULL DEFAULT 0,
  PRIMARY KEY (legacy_key_id, day, endpoint)
);
`,
  },
  {
    // Caches of credentials and lookups are dropped on these notifications, on every instance,
    // from the commit on (NOTIFY is transactional). Payload: topic and schema.
    id: '0006_change_notifications',
    up: `
CREATE FUNCTION notify_credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_changes', 'credentials:' || current_schema());
  RETURN NULL;
END $$;
CREATE FUNCTION notify_teams_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_changes', 'teams:' || current_schema());
  RETURN NULL;
END $$;
CREATE TRIGGER users_credentials_changed AFTER UPDATE OF role, disabled_at, employee_id, email, display_name OR DELETE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
CREATE TRIGGER user_companies_credentials_changed AFTER INSERT OR UPDATE OR DELETE ON user_companies
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
CREATE TRIGGER manager_teams_credentials_changed AFTER INSERT OR UPDATE OR DELETE ON manager_teams
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
CREATE TRIGGER manager_regions_credentials_changed AFTER INSERT OR UPDATE OR DELETE ON manager_regions
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
CREATE TRIGGER api_keys_credentials_changed AFTER UPDATE OF revoked_at, capabilities, user_id, secret_hash OR DELETE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
CREATE TRIGGER legacy_keys_credentials_changed
  AFTER UPDATE OF disabled_at, scopes, company_id, key_hash, bridge_key_id, bridge_key_ciphertext OR DELETE ON legacy_keys
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
CREATE TRIGGER teams_changed AFTER INSERT OR UPDATE OR DELETE ON teams
  FOR EACH STATEMENT EXECUTE FUNCTION notify_teams_changed();
`,
  },
  {
    // OAuth for MCP clients: oidc-provider's records (clients, grants = connections, codes, tokens,
    // interactions) keyed by a SHA-256 of their id, so a leaked table yields no usable token.
    // Sign-ins to the application pages live in app_sessions, also hashed; passwords are scrypt.
    id: '0007_oauth',
    up: `
ALTER TABLE users ADD COLUMN password_hash text;

CREATE TABLE oauth_records (
  kind text NOT NULL,
  id_hash text NOT NULL,
  payload jsonb NOT NULL,
  grant_id text,
  uid text,
  account_id text,
  expires_at timestamptz,
  consumed_at timestamptz,
  PRIMARY KEY (kind, id_hash)
);
CREATE INDEX oauth_records_grant_idx ON oauth_records (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oauth_records_uid_idx ON oauth_records (uid) WHERE uid IS NOT NULL;
CREATE INDEX oauth_records_account_idx ON oauth_records (account_id, kind) WHERE account_id IS NOT NULL;

CREATE TABLE app_sessions (
  id_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX app_sessions_user_idx ON app_sessions (user_id);
`,
  },
  {
    // The cutover of a legacy key: its successor v4 key (minted from the running service), the key's
    // first successful v4 call (set once), and who disabled a legacy key and why (an admin, the
    // operator's CLI or the automatic policy). Keys disabled before were disabled by the operator.
    id: '0008_legacy_key_cutover',
    up: `
ALTER TABLE api_keys ADD COLUMN first_used_at timestamptz;

ALTER TABLE legacy_keys ADD COLUMN successor_key_id text REFERENCES api_keys (id);
ALTER TABLE legacy_keys ADD COLUMN successor_minted_at timestamptz;
ALTER TABLE legacy_keys ADD COLUMN disabled_by text CHECK (disabled_by IN ('operator', 'admin', 'policy'));
ALTER TABLE legacy_keys ADD COLUMN disabled_by_user_id text REFERENCES users (id);
ALTER TABLE legacy_keys ADD COLUMN disable_reason text;
ALTER TABLE legacy_keys ADD CONSTRAINT legacy_keys_successor_minted CHECK ((successor_key_id IS NULL) = (successor_minted_at IS NULL));
UPDATE legacy_keys SET disabled_by = 'operator' WHERE disabled_at IS NOT NULL;
ALTER TABLE legacy_keys ADD CONSTRAINT legacy_keys_disabled_by CHECK ((disabled_at IS NULL) = (disabled_by IS NULL));
`,
  },
  {
    // Expired OAuth records (and clients registered but never authorized, which now expire) are
    // deleted at each registration: the index keeps that a short range scan.
    id: '0009_oauth_records_expiry',
    up: `
CREATE INDEX oauth_records_expires_idx ON oauth_records (expires_at) WHERE expires_at IS NOT NULL;
`,
  },
  {
    // Key hints showed up to a quarter of a key (12 characters at most); they now show an eighth (8 at
    // most). The raw keys are not kept, so stored hints keep the first half of what they showed,
    // which never exceeds the new rule.
    id: '0010_shorter_legacy_key_hints',
    up: `
UPDATE legacy_keys SET key_hint = left(key_hint, (char_length(key_hint) - 1) / 2) || '…';
`,
  },
  {
    // A rotated refresh token may be used once more within the grace window, never twice.
    id: '0011_refresh_token_grace_uses',
    up: `
ALTER TABLE oauth_records ADD COLUMN grace_uses integer NOT NULL DEFAULT 0;
`,
  },
  {
    // Free-text search (a case-insensitive substring, lower(column) ILIKE '%text%') served by trigram indexes
    // instead of a scan of every row. The indexes are on lower(column), which only a search names: an index on
    // the column itself would also offer to serve equality (pg_trgm 1.6), and the planner took it over the
    // primary key for lookups by id, at a hundred times the cost. The extension lives in public so
    // that every schema of the database finds it (tests use a schema per file); pg_trgm is a trusted
    // extension: the database owner may create it.
    id: '0012_trigram_search',
    up: `
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
CREATE INDEX employees_name_trgm_idx ON employees USING gin (lower(display_name) public.gin_trgm_ops);
CREATE INDEX employees_email_trgm_idx ON employees USING gin (lower(email) public.gin_trgm_ops);
CREATE INDEX teams_name_trgm_idx ON teams USING gin (lower(name) public.gin_trgm_ops);
CREATE INDEX company_addresses_alias_trgm_idx ON company_addresses USING gin (lower(alias) public.gin_trgm_ops);
CREATE INDEX company_addresses_city_trgm_idx ON company_addresses USING gin (lower(city) public.gin_trgm_ops);
CREATE INDEX devices_serial_trgm_idx ON devices USING gin (lower(serial_number) public.gin_trgm_ops);
CREATE INDEX devices_make_model_trgm_idx ON devices USING gin (lower(manufacturer || ' ' || model) public.gin_trgm_ops);
CREATE INDEX orders_id_trgm_idx ON orders USING gin (lower(id) public.gin_trgm_ops);
`,
  },
  {
    // Exact list totals without reading every row: each company's row count per table, kept by statement
    // triggers in the transaction that writes the rows (so it commits and rolls back with them). A company's
    // count is spread over 16 slots picked at random, so concurrent writers rarely wait on one row; a
    // total is the sum of its slots. An update counts only when it moves rows between companies.
    id: '0013_row_counts',
    up: `
CREATE TABLE row_counts (
  relation text NOT NULL,
  company_id text NOT NULL,
  slot smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (relation, company_id, slot)
);
CREATE FUNCTION count_company_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO row_counts AS c (relation, company_id, slot, n)
    SELECT TG_TABLE_NAME, company_id, floor(random() * 16)::smallint, count(*) FROM added GROUP BY company_id
    ON CONFLICT (relation, company_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO row_counts AS c (relation, company_id, slot, n)
    SELECT TG_TABLE_NAME, company_id, floor(random() * 16)::smallint, -count(*) FROM removed GROUP BY company_id
    ON CONFLICT (relation, company_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSE
    INSERT INTO row_counts AS c (relation, company_id, slot, n)
    SELECT TG_TABLE_NAME, company_id, floor(random() * 16)::smallint, sum(delta) FROM (
      SELECT company_id, 1 AS delta FROM added UNION ALL SELECT company_id, -1 FROM removed
    ) moved GROUP BY company_id HAVING sum(delta) <> 0
    ON CONFLICT (relation, company_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END
$$;
${['employees', 'teams', 'devices', 'orders', 'company_addresses']
  .map(
    (table) => `
CREATE TRIGGER ${table}_count_insert AFTER INSERT ON ${table} REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION count_company_rows();
CREATE TRIGGER ${table}_count_delete AFTER DELETE ON ${table} REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION count_company_rows();
CREATE TRIGGER ${table}_count_update AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS removed NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION count_company_rows();
INSERT INTO row_counts (relation, company_id, slot, n) SELECT '${table}', company_id, 0, count(*) FROM ${table} GROUP BY company_id;`,
  )
  .join('')}
`,
  },
  {
    // Trigram indexes written straight into their tree. By default a GIN index queues new entries in a pending
    // list of up to 4 MB that every search reads through in full until a vacuum merges it: at a million orders
    // that list, not the tree, was 90 % of a search (12 ms against 1 ms). Writes here are a few rows per
    // request, so the queue saves little on insert and costs every read. The entries already queued are merged now.
    id: '0014_trigram_indexes_without_pending_list',
    up: `${TRIGRAM_INDEXES.map((index) => `
ALTER INDEX ${index} SET (fastupdate = off);
SELECT gin_clean_pending_list('${index}'::regclass);`).join('')}
`,
  },
  {
    // A list filtered by status or order type counts its rows on an index of the company's orders with that
    // value, newest first, which also serves the page. The status index of 0003 was on lower(status), which no
    // query names (status is stored and filtered in its canonical spelling), so each such total read every
    // order of the company.
    id: '0015_orders_status_and_type_indexes',
    up: `
DROP INDEX orders_status_idx;
CREATE INDEX orders_company_status_idx ON orders (company_id, status, created_at, id);
CREATE INDEX orders_company_type_idx ON orders (company_id, order_type, created_at, id);
`,
  },
  {
    // A search by employee name gathers every order of the matching employees, scope and sort value
    // included, before it counts them and cuts the page (src/store/paging.ts, searchPage). Carrying the
    // company and the creation time in the employee index lets that pass read the index alone once the
    // table is vacuumed: 1,790 orders of a common last name at 1M orders, 1.4 ms against 3.5 ms from the heap.
    id: '0016_orders_employee_index_covers_search',
    up: `
DROP INDEX orders_employee_idx;
CREATE INDEX orders_employee_idx ON orders (employee_id, id) INCLUDE (company_id, created_at);
`,
  },
  {
    // Until the sunset a disable can be undone (an operator's CLI or an admin), recorded like the
    // disable: when, by whom and why. The last undo is kept; the quiet period counts again from it.
    id: '0017_legacy_key_enable',
    up: `
ALTER TABLE legacy_keys ADD COLUMN enabled_at timestamptz;
ALTER TABLE legacy_keys ADD COLUMN enabled_by text CHECK (enabled_by IN ('operator', 'admin'));
ALTER TABLE legacy_keys ADD COLUMN enabled_by_user_id text REFERENCES users (id);
ALTER TABLE legacy_keys ADD COLUMN enable_reason text;
ALTER TABLE legacy_keys ADD CONSTRAINT legacy_keys_enabled_by CHECK ((enabled_at IS NULL) = (enabled_by IS NULL));
`,
  },
  {
    // A refresh token's spare use within the grace is gone: a repeat gets the rotation's own answer
    // (src/oauth/refresh-successor.ts), so the count of spare uses is no longer kept.
    id: '0018_drop_refresh_grace_uses',
    up: `ALTER TABLE oauth_records DROP COLUMN grace_uses;`,
  },
  {
    // A write's first answer per Idempotency-Key and user, replayed to a retry (src/http/idempotency.ts).
    // The row is inserted in the write's own transaction, so a crash keeps both or neither; the answer is
    // sealed under SVC_SECRET_KEY (it may hold personal data or a key shown once).
    id: '0019_idempotency_keys',
    up: `
CREATE TABLE idempotency_keys (
  user_id text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  status integer,
  sealed_answer text,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);
`,
  },
  {
    // Which capabilities each API key's successful v4 calls exercised, and when first: a successor key
    // counts as working once its calls cover what the legacy key's v2 calls need. Written once per
    // key and capability (src/access/first-use.ts), so a few rows per key, never one per call.
    id: '0020_api_key_capability_uses',
    up: `
CREATE TABLE api_key_capability_uses (
  key_id text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  capability text NOT NULL,
  first_used_at timestamptz NOT NULL,
  PRIMARY KEY (key_id, capability)
);
`,
  },
  {
    // The cutover's audit trail (src/legacy/cutover-events.ts): each mint, replace, disable and undo
    // of a legacy key, written in the change's own transaction, listed newest first per company. The
    // admin's e-mail is kept as it was, as the log line named it; seq orders events of the same instant.
    id: '0021_legacy_key_events',
    up: `
CREATE TABLE legacy_key_events (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  legacy_key_id text NOT NULL REFERENCES legacy_keys (id) ON DELETE CASCADE,
  company_id text NOT NULL REFERENCES companies (id),
  at timestamptz NOT NULL,
  action text NOT NULL CHECK (action IN ('successor_minted', 'successor_replaced', 'disabled', 'enabled')),
  by text NOT NULL CHECK (by IN ('operator', 'admin', 'policy')),
  admin_user_id text REFERENCES users (id),
  admin_email text,
  reason text,
  forced_at_stage text,
  successor_key_id text,
  CHECK ((by = 'admin') = (admin_user_id IS NOT NULL))
);
CREATE INDEX legacy_key_events_company_idx ON legacy_key_events (company_id, at DESC, seq DESC);
`,
  },
  {
    // Each listening connection of an instance delivers its own copy of a notification: the writing
    // transaction's id in the payload lets the feed act on the first copy only (src/store/change-feed.ts).
    // Readers of the two-part payload read the same topic and schema from it.
    id: '0022_change_notification_ids',
    up: `
CREATE OR REPLACE FUNCTION notify_credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_changes', 'credentials:' || current_schema() || ':' || txid_current());
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION notify_teams_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_changes', 'teams:' || current_schema() || ':' || txid_current());
  RETURN NULL;
END $$;
`,
  },
];

const LOCK_KEY = 4_242_001;

const appliedMigrations = async (db: Queryable) => new Set((await db.query<{ id: string }>(sql`SELECT id FROM schema_migrations`)).map((r) => r.id));

export async function migrate(db: Db): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query(sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`);
    await tx.query(
      sql`CREATE TABLE IF NOT EXISTS schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = await appliedMigrations(tx);
    const applied: string[] = [];
    for (const migration of MIGRATIONS) {
      if (done.has(migration.id)) continue;
      for (const statement of splitStatements(migration.up)) {
        await tx.query(raw(statement));
      }
      await tx.query(sql`INSERT INTO schema_migrations (id) VALUES (${migration.id})`);
      applied.push(migration.id);
    }
    return applied;
  });
}

/**
 * The migrations of this build that `db` has not applied, in order; none when its schema is this
 * build's or newer. Only reads: a process that must not migrate (the gateway apart) checks with it.
 */
export async function pendingMigrations(db: Queryable): Promise<string[]> {
  const [table] = await db.query<{ present: boolean }>(sql`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`);
  const done = table!.present ? await appliedMigrations(db) : new Set<string>();
  return MIGRATIONS.map((migration) => migration.id).filter((id) => !done.has(id));
}

/** Splits on semicolons outside $$-quoted function bodies; our migrations hold none inside literals. */
function splitStatements(script: string): string[] {
  const statements: string[] = [];
  let current = '';
  for (const [index, part] of script.split('$$').entries()) {
    // Odd parts lie between a pair of $$: a function body, kept whole.
    if (index % 2 === 1) {
      current += `$$${part}$$`;
      continue;
    }
    const pieces = part.split(';');
    current += pieces.shift();
    for (const piece of pieces) {
      statements.push(current);
      current = piece;
    }
  }
  statements.push(current);
  return statements.map((s) => s.trim()).filter((s) => s.length > 0);
}
