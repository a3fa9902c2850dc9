// Goal: the permission grammar accepts exactly its canonical strings, refuses everything else
// with a named reason, and printing round-trips. Method: hand-picked cases plus fast-check
// properties over generated permissions, mutated permissions and arbitrary strings.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  PermissionParseError,
  type PermissionRefusal,
  parsePermission,
  printPermission,
  tryParsePermission,
} from '../src/index.js';
import { permissionArb } from './arbitraries.js';

const REASONS: readonly PermissionRefusal[] = [
  'too_long',
  'missing_action',
  'unknown_action',
  'missing_object',
  'unknown_object_kind',
  'wrong_segment_count',
  'bad_name',
  'wildcard_not_trailing',
  'wildcard_tenant',
  'wildcard_node',
  'cluster_must_be_wildcard',
  'action_not_applicable',
];

function reasonOf(input: string): PermissionRefusal | 'accepted' {
  const r = tryParsePermission(input);
  return r.ok ? 'accepted' : r.error.reason;
}

describe('permission grammar', () => {
  it('the_documented_permission_forms_parse_into_their_parts', () => {
    expect(parsePermission('stream.publish:stream:t1/orders/*')).toEqual({
      action: 'stream.publish',
      kind: 'stream',
      segments: ['t1', 'orders', '*'],
    });
    for (const s of [
      'tenant.manage:tenant:t1',
      'tenant.manage:cluster:*',
      'namespace.manage:namespace:t1/*',
      'stream.subscribe:stream:t1/*/*',
      'cache.write:cache:t1/ns/sessions',
      'group.consume:group:t1/ns/orders/billing',
      'group.manage:group:t1/ns/*/*',
      'rbac.manage:tenant:t1',
      'token.delegate:tenant:t1',
      'node.view:cluster:*',
      'node.manage:node:broker-1',
    ]) {
      expect(printPermission(parsePermission(s))).toBe(s);
    }
  });

  it('each_grammar_rule_refuses_with_its_own_reason', () => {
    const cases: [string, PermissionRefusal][] = [
      ['x'.repeat(700), 'too_long'],
      [':stream:t1/a/b', 'missing_action'],
      ['stream.publish', 'missing_action'],
      ['stream.delete:stream:t1/a/b', 'unknown_action'],
      ['stream.publish:stream', 'missing_object'],
      ['stream.publish:stream:', 'missing_object'],
      ['stream.publish:topic:t1/a/b', 'unknown_object_kind'],
      ['stream.publish:stream:t1/a', 'wrong_segment_count'],
      ['stream.publish:stream:t1/a/b/c', 'wrong_segment_count'],
      ['stream.publish:stream:t1/a/-b', 'bad_name'],
      ['stream.publish:stream:t1//b', 'bad_name'],
      ['stream.publish:stream:t1/a b/c', 'bad_name'],
      ['stream.publish:stream:t1/*/orders', 'wildcard_not_trailing'],
      ['stream.publish:stream:*/*/*', 'wildcard_tenant'],
      ['tenant.manage:tenant:*', 'wildcard_tenant'],
      ['node.manage:node:*', 'wildcard_node'],
      ['node.view:cluster:nodes', 'cluster_must_be_wildcard'],
      ['cache.read:stream:t1/a/b', 'action_not_applicable'],
      ['node.view:node:broker-1', 'action_not_applicable'],
      ['stream.publish:namespace:t1/a', 'action_not_applicable'],
    ];
    for (const [input, reason] of cases) expect([input, reasonOf(input)]).toEqual([input, reason]);
    expect(() => parsePermission('nope')).toThrow(PermissionParseError);
  });

  it('a_parsed_then_printed_permission_round_trips', () => {
    fc.assert(
      fc.property(permissionArb(), (p) => {
        const printed = printPermission(p);
        const parsed = parsePermission(printed);
        expect(parsed).toEqual(p);
        expect(printPermission(parsed)).toBe(printed);
      }),
      { numRuns: 2000 },
    );
  });

  it('garbage_strings_are_refused_with_a_reason', () => {
    // Arbitrary strings and single-character mutations of valid permissions: parsing either
    // refuses with one of the named reasons, or accepts a string that is already canonical.
    const mutated = fc
      .tuple(permissionArb(), fc.nat(), fc.string({ maxLength: 2 }))
      .map(([p, at, ins]) => {
        const s = printPermission(p);
        const i = at % (s.length + 1);
        return s.slice(0, i) + ins + s.slice(i + 1);
      });
    const garbage = fc.oneof(fc.string({ maxLength: 64 }), fc.string({ unit: 'binary' }), mutated);
    fc.assert(
      fc.property(garbage, (s) => {
        const r = tryParsePermission(s);
        if (r.ok) {
          expect(printPermission(r.permission)).toBe(s);
        } else {
          expect(REASONS).toContain(r.error.reason);
          expect(r.error.code).toBe('FELIX_AUTHZ_PERMISSION_INVALID');
        }
      }),
      { numRuns: 5000 },
    );
  });
});
