import { createHash } from 'node:crypto';

/** Server-rendered pages: plain HTML, one small stylesheet, no script. */

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A fragment of trusted HTML; interpolations into `html` are escaped unless they are fragments. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Interpolation = Html | string | number | null | undefined | false | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value as string | number));
}

export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let text = strings[0] ?? '';
  values.forEach((value, i) => {
    text += render(value) + (strings[i + 1] ?? '');
  });
  return new Html(text);
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#f6f7f9}
header{background:#1f2a44;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center;flex-wrap:wrap}
header a{color:#fff}header button{color:#fff;background:transparent;border:1px solid #fff;border-radius:4px}header nav{display:flex;gap:1rem;flex:1}
main{max-width:46rem;margin:1.5rem auto;padding:0 1rem}
section,form.card{background:#fff;border:1px solid #d8dce3;border-radius:6px;padding:1rem 1.2rem;margin:0 0 1rem}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6eb;vertical-align:top}
label{display:block;margin:.3rem 0}input[type=email],input[type=password],input[type=text]{width:100%;max-width:24rem;padding:.4rem;font:inherit}
button{font:inherit;padding:.35rem .9rem;cursor:pointer}.notice{border-left:4px solid #c77700;background:#fff8e6;padding:.6rem .9rem;margin:.8rem 0}
.error{border-left:4px solid #b00020;background:#fdecee;padding:.6rem .9rem}.secret{font-family:monospace;word-break:break-all;background:#eef6ee;padding:.6rem;border:1px solid #9c9}
.tools{color:#555;font-size:.9rem}.inline{display:inline}
.big{font-size:2.6rem;font-weight:700;line-height:1.1;margin:.2rem 0}.sunset{border-left:6px solid #c77700}
main:has(.dashboard),main:has(.guide){max-width:64rem}pre{background:#f0f2f5;border:1px solid #d8dce3;border-radius:4px;padding:.6rem;white-space:pre-wrap;overflow-wrap:anywhere}.nowrap{white-space:nowrap}.chart{width:100%;height:auto}.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4rem 1.2rem}`;

export interface PageOptions {
  title: string;
  body: Html;
  /** The signed-in user, for the navigation; absent on the sign-in page. */
  user?: { email: string; role?: string } | undefined;
  csrfToken?: string | undefined;
}

export function page({ title, body, user, csrfToken }: PageOptions): string {
  const nav = user
    ? html`<nav aria-label="Main"><a href="/app/developers/api-keys">Developers → API Keys</a>
<a href="/app/connections">Connections → MCP Connectors</a>${user.role === 'admin' ? html`<a href="/app/migration">v2 migration</a>` : ''}</nav>
<span>${user.email}</span>
<form class="inline" method="post" action="/app/sign-out"><input type="hidden" name="_csrf" value="${csrfToken ?? ''}"><button type="submit">Sign out</button></form>`
    : html`<nav aria-label="Main"></nav>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} · Device Lifecycle Service</title><style>${new Html(STYLE)}</style></head>
<body><header><strong>Device Lifecycle Service</strong>${nav}</header>
<main id="main"><h1>${title}</h1>${body}</main></body></html>`.text;
}

/** CSP hash of the one inline stylesheet: pages run no script and load nothing else. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;
