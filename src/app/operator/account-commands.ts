import { Option, type Command } from 'commander';
import { outputMintedSuccessor } from './legacy-key-commands.js';
import { output, storeOptions, withCore, type StoreFlags } from './store-options.js';

async function readFirstStdinLine(): Promise<string> {
  const { createInterface } = await import('node:readline');
  const lines = createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return '';
}

/** `users` and `keys`: the accounts and v4 API keys an operator manages at the host. */
export function addAccountCommands(program: Command): void {
  const users = program.command('users').description('manage users');
  storeOptions(
    users
      .command('create')
      .description('create a user')
      .requiredOption('--email <email>', 'the email the user signs in with')
      .requiredOption('--name <displayName>', 'the name shown for the user')
      .addOption(new Option('--role <role>', 'what the user may do').choices(['admin', 'manager', 'employee']).makeOptionMandatory())
      .requiredOption('--company <id...>', 'company id(s); only admins may have several')
      .option('--team <id...>', 'manager scope: team ids')
      .option('--region <code...>', 'manager scope: ISO country codes')
      .option('--employee <id>', 'the employee record of an employee user')
      .option('--non-personal', 'a dedicated service user, not a person (recommended for integrations)'),
  ).action(async (flags: StoreFlags & { email: string; name: string; role: 'admin'; company: string[]; team?: string[]; region?: string[]; employee?: string; nonPersonal?: boolean }) => {
    const { createUser } = await import('../../domain/admin.js');
    await withCore(flags, async (core) => {
      const id = await createUser(core.db, {
        email: flags.email,
        displayName: flags.name,
        role: flags.role,
        companyIds: flags.company,
        teamIds: flags.team ?? [],
        regions: (flags.region ?? []).map((r) => r.toUpperCase()),
        employeeId: flags.employee,
        nonPersonal: flags.nonPersonal ?? false,
      });
      output(flags, { id, email: flags.email, role: flags.role }, `Created user ${id} <${flags.email}>`);
    });
  });
  storeOptions(
    users
      .command('set-password')
      .description('set the password a user signs in to the application pages with; read from the first line of stdin')
      .requiredOption('--email <email>', 'the user’s email'),
  ).action(async (flags: StoreFlags & { email: string }) => {
    const { setUserPassword } = await import('../../access/passwords.js');
    // Never a flag: a password in argv shows in the process list and the shell history.
    const password = (await readFirstStdinLine()).replace(/\r$/, '');
    await withCore(flags, async (core) => {
      await setUserPassword(core.db, flags.email, password);
      output(flags, { email: flags.email, passwordSet: true }, `Password set for ${flags.email}`);
    });
  });
  for (const [name, disabled] of [['disable', true], ['enable', false]] as const) {
    storeOptions(
      users.command(name).description(`${name} a user (keys bound to it ${disabled ? 'stop' : 'resume'} working at once)`).requiredOption('--email <email>', 'the user’s email'),
    ).action(async (flags: StoreFlags & { email: string }) => {
      const { setUserDisabled } = await import('../../domain/admin.js');
      await withCore(flags, async (core) => {
        await setUserDisabled(core.db, flags.email, disabled);
        output(flags, { email: flags.email, disabled }, `User ${flags.email} ${name}d`);
      });
    });
  }

  const keys = program.command('keys').description('manage API keys');
  storeOptions(
    keys
      .command('mint')
      .description('mint a v4 API key bound to a user; the raw key is printed once (for a legacy key’s successor user, as legacy-keys mint-successor: linked to the legacy key)')
      .requiredOption('--user <email>', 'the user the key is bound to')
      .requiredOption('--capabilities <list>', 'comma-separated capabilities, or "all" (within the user’s role)')
      .option('--name <name>', 'a label for the key', 'API key'),
  ).action(async (flags: StoreFlags & { user: string; capabilities: string; name: string }) => {
    const [{ mintKeyForUser }, { parseCapabilityList }, { legacyKeyOfSuccessorUser, mintSuccessorKey, OPERATOR }] = await Promise.all([
      import('../../domain/admin.js'),
      import('../../access/capabilities.js'),
      import('../../migration/cutover.js'),
    ]);
    const capabilities = parseCapabilityList(flags.capabilities);
    await withCore(flags, async (core) => {
      // A key for a legacy key's successor user is that key's successor: minted and linked as the API does.
      const legacyKey = await legacyKeyOfSuccessorUser(core, flags.user);
      if (legacyKey) {
        const request = { capabilities: capabilities === 'all' ? legacyKey.capabilities : capabilities };
        return outputMintedSuccessor(flags, await mintSuccessorKey(core, legacyKey.id, OPERATOR, request));
      }
      const minted = await mintKeyForUser(core.db, flags.user, capabilities, flags.name);
      output(
        flags,
        { keyId: minted.keyId, apiKey: minted.rawKey, user: flags.user, capabilities: minted.capabilities },
        `${minted.rawKey}\n(key id ${minted.keyId}; this is the only time the key is shown)`,
      );
    });
  });
  storeOptions(keys.command('revoke').description('revoke a key (takes effect on the next request)').argument('<keyId>')).action(
    async (keyId: string, flags: StoreFlags) => {
      const { revokeKey } = await import('../../domain/admin.js');
      await withCore(flags, async (core) => {
        await revokeKey(core.db, keyId);
        output(flags, { keyId, revoked: true }, `Revoked ${keyId}`);
      });
    },
  );
}
