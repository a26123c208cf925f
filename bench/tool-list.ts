import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CAPABILITIES } from '../src/access/capabilities.js';
import { listTools } from '../src/mcp/tools.js';
import { approxTokens, everyCapability, MEASURED_BASE_URL, toolListSize, type ToolListSize } from '../test/mcp/support/tool-list-size.js';

/*
 * What every MCP conversation pays for the tool list, in bytes: the part a client sends the model
 * (each tool's name, description and input schema) and the whole tools/list result. Sizes, not
 * timings: the same on every machine. The list as it was before it was made lean is measured from
 * the sources of BENCH_TOOL_LIST_BASELINE (a git revision), loaded beside the current ones.
 */

const BASELINE = process.env.BENCH_TOOL_LIST_BASELINE ?? '33c1c8d';
const root = resolve(new URL('..', import.meta.url).pathname);
const git = (...args: string[]) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();

type ListTools = typeof listTools;

/** The tool list of the sources at `revision`: its src/ unpacked into a scratch folder that shares this checkout's packages. */
async function baselineSize(revision: string): Promise<ToolListSize> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-tool-list-'));
  try {
    const archive = execFileSync('git', ['-C', root, 'archive', revision, 'src', 'package.json']);
    execFileSync('tar', ['-x', '-C', dir], { input: archive });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    const old = (await import(pathToFileURL(join(dir, 'src/mcp/tools.ts')).href)) as { listTools: ListTools };
    return toolListSize(old.listTools(everyCapability(CAPABILITIES), MEASURED_BASE_URL));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const before = await baselineSize(BASELINE);
const now = toolListSize(listTools(everyCapability(CAPABILITIES), MEASURED_BASE_URL));
const head = git('rev-parse', '--short', 'HEAD');
const dirty = git('status', '--porcelain', '--', 'src').length > 0 ? ' + uncommitted changes' : '';

const row = (label: string, size: ToolListSize) => [
  label,
  size.tools,
  size.modelBytes,
  approxTokens(size.modelBytes),
  size.listBytes,
  approxTokens(size.listBytes),
];
const ratio = (a: number, b: number) => (a / b).toFixed(2);
const table = [
  ['tool list', 'tools', 'model-facing bytes', '≈ tokens', 'whole tools/list bytes', '≈ tokens'],
  ['---', '---', '---', '---', '---', '---'],
  row(`before: ${BASELINE}`, before),
  row(`now: ${head}${dirty}`, now),
  ['ratio now ÷ before', '', ratio(now.modelBytes, before.modelBytes), '', ratio(now.listBytes, before.listBytes), ''],
].map((cells) => `| ${cells.join(' | ')} |`);

const text = [
  '# tool-list',
  '',
  '- Command: `npm run bench -- tool-list`',
  `- Baseline: ${BASELINE} (BENCH_TOOL_LIST_BASELINE), the list before descriptions and schemas were made lean`,
  `- Date: ${new Date().toISOString().slice(0, 10)}`,
  '',
  ...table,
  '',
  'Sizes of the list an admin key sees (every tool callable, so no description carries the "Unavailable" sentence), icons on http://127.0.0.1:3001.',
  'Model-facing: each tool as `{name, description, input_schema}` (the form a client sends the Anthropic Messages API; OpenAI\'s function form holds the same three), JSON, summed. Whole: the `tools/list` result `{tools}` as JSON, output schemas, titles, annotations, icons and `_meta` included.',
  '≈ tokens: bytes ÷ 4, a rough rule for English and JSON; a model\'s own tokenizer gives its exact count. test/mcp/tool-list.test.ts holds the model-facing part to 25,000 bytes.',
  '',
].join('\n');
writeFileSync(new URL('./results/tool-list.md', import.meta.url), text);
console.log(text);
