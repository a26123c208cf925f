import { describe, expect, it } from 'vitest';
import { and, containsText, join, raw, sql } from '../../src/store/sql.js';

describe('Sql fragments', () => {
  it('numbers parameters in the order they appear, through nested fragments', () => {
    const scope = sql`company_id = ${'c1'}`;
    const statement = sql`SELECT a FROM t WHERE id = ${'x'} AND ${scope} AND n > ${3}`;
    expect(statement.toQuery()).toEqual({ text: 'SELECT a FROM t WHERE id = $1 AND company_id = $2 AND n > $3', values: ['x', 'c1', 3] });
  });

  it('inlines a fragment without parameters the same wherever it stands, and renders it again when reused', () => {
    const columns = sql`${join([raw('a'), raw('b')], ', ')}, c`;
    const first = sql`SELECT ${columns} FROM t WHERE id = ${'x'}`.toQuery();
    const second = sql`SELECT ${'y'} AS k, ${columns} FROM t WHERE n = ${1}`.toQuery();
    const third = sql`SELECT ${columns} FROM t WHERE id = ${'z'}`.toQuery();
    expect(first).toEqual({ text: 'SELECT a, b, c FROM t WHERE id = $1', values: ['x'] });
    expect(second).toEqual({ text: 'SELECT $1 AS k, a, b, c FROM t WHERE n = $2', values: ['y', 1] });
    expect(third).toEqual({ text: 'SELECT a, b, c FROM t WHERE id = $1', values: ['z'] });
  });

  it('numbers a fragment with parameters anew each time it is inlined', () => {
    const recent = sql`created_at > ${'2026-01-01'}`;
    const statement = sql`SELECT 1 WHERE ${and([recent, sql`id = ${'x'}`])} OR ${recent}`;
    expect(statement.toQuery()).toEqual({
      text: 'SELECT 1 WHERE (created_at > $1 AND id = $2) OR created_at > $3',
      values: ['2026-01-01', 'x', '2026-01-01'],
    });
  });

  it('gives statements of one template and shape the same text, and a new shape its own', () => {
    const byId = (scope: ReturnType<typeof sql>, id: string) => sql`SELECT a FROM t WHERE ${scope} AND id = ${id}`;
    const one = (company: string) => sql`${raw('t')}.company_id = ${company}`;
    const many = (companies: string[]) => sql`${raw('t')}.company_id = ANY(${companies}) AND ${raw('t')}.live`;
    const first = byId(one('c1'), 'x').toQuery();
    const second = byId(one('c2'), 'y').toQuery();
    expect(second).toEqual({ text: 'SELECT a FROM t WHERE t.company_id = $1 AND id = $2', values: ['c2', 'y'] });
    // The same string, not an equal one: what makes the namer's and the driver's checks cheap.
    expect(Object.is(second.text, first.text)).toBe(true);
    expect(byId(many(['c1', 'c2']), 'z').toQuery()).toEqual({
      text: 'SELECT a FROM t WHERE t.company_id = ANY($1) AND t.live AND id = $2',
      values: [['c1', 'c2'], 'z'],
    });
    expect(byId(one('c3'), 'w').toQuery()).toEqual({ text: 'SELECT a FROM t WHERE t.company_id = $1 AND id = $2', values: ['c3', 'w'] });
    expect(byId(sql`${raw('u')}.company_id = ${'c4'}`, 'v').toQuery().text).toBe('SELECT a FROM t WHERE u.company_id = $1 AND id = $2');
    expect(byId(raw('TRUE'), 'v').toQuery()).toEqual({ text: 'SELECT a FROM t WHERE TRUE AND id = $1', values: ['v'] });
  });

  it('plans a statement per call when any nested fragment is a search, and keeps a chosen planning otherwise', () => {
    const search = containsText('50%', [sql`o.note`]);
    expect(sql`SELECT 1 WHERE ${and([sql`a = ${1}`, search])}`.planning).toBe('custom');
    expect(sql`SELECT 1 WHERE ${and([sql`a = ${1}`])}`.planning).toBe('auto');
    expect(search.toQuery()).toEqual({ text: '(lower(o.note) LIKE lower($1))', values: ['%50\\%%'] });
    const page = sql`SELECT 1 WHERE a = ${1} LIMIT ${2}`;
    const once = page.planned('generic');
    expect(once.planning).toBe('generic');
    expect(once.toQuery()).toEqual(page.toQuery());
    expect(sql`SELECT 1 WHERE ${search} LIMIT ${2}`.planned('generic').planning).toBe('custom');
    expect(sql`SELECT * FROM (${once}) page`.planning).toBe('generic');
  });
});
