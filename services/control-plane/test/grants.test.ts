// Goal: what an issued token carries is the principal's RBAC grants narrowed by the request:
// filters only narrow, resources restrict, a broker token keeps only broker actions, and bad
// permission strings are refused with a 400.
// Method: grantedPermissions called directly; fast-check for the never-widens property.
import { PermissionSet, parsePermission, printPermission, withinScope } from '@felix/authz';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { grantedPermissions, parseNarrowing } from '../src/auth/grants.js';
import { checkSubject } from '../src/auth/rbac-changes.js';
import { splitRefreshToken } from '../src/auth/tokens.js';
import { InvalidNameError, InvalidPermissionError, InvalidRequestError } from '../src/errors.js';

const HELD = [
  'stream.publish:stream:t1/orders/*',
  'stream.subscribe:stream:t1/*/*',
  'namespace.manage:namespace:t1/billing',
  'rbac.view:tenant:t1',
  'node.view:cluster:*',
];

const printed = (ps: ReturnType<typeof grantedPermissions>) => ps.map(printPermission).sort();

describe('token grants', () => {
  it('requested_permissions_only_narrow_what_rbac_grants', () => {
    const n = parseNarrowing(
      {
        requested: [
          'stream.publish:stream:t1/orders/eu',
          'stream.publish:stream:t1/payments/eu',
          'stream.subscribe:stream:t2/orders/eu',
        ],
      },
      'felix-controlplane',
    );
    expect(printed(grantedPermissions('t1', HELD, n))).toEqual([
      'stream.publish:stream:t1/orders/eu',
    ]);
  });

  it('resources_restrict_held_permissions_to_the_named_objects', () => {
    const n = parseNarrowing(
      { resources: ['stream:t1/orders/eu', 'namespace:t1/billing', 'stream:t2/x/y'] },
      'felix-controlplane',
    );
    expect(printed(grantedPermissions('t1', HELD, n))).toEqual([
      'namespace.manage:namespace:t1/billing',
      'stream.publish:stream:t1/orders/eu',
      'stream.subscribe:stream:t1/orders/eu',
    ]);
  });

  it('a_broker_audience_token_keeps_only_the_actions_a_broker_checks', () => {
    const n = parseNarrowing({ audience: 'felix-broker' }, 'felix-controlplane');
    expect(printed(grantedPermissions('t1', HELD, n))).toEqual([
      'stream.publish:stream:t1/orders/*',
      'stream.subscribe:stream:t1/*/*',
    ]);
  });

  it('a_narrowing_with_a_bad_permission_or_audience_is_refused', () => {
    expect(() =>
      parseNarrowing({ requested: ['stream.publish:stream:*/x/y'] }, 'felix-broker'),
    ).toThrow(InvalidPermissionError);
    expect(() => parseNarrowing({ resources: ['bogus:t1'] }, 'felix-broker')).toThrow(
      InvalidPermissionError,
    );
    expect(() => parseNarrowing({ audience: 'felix-other' }, 'felix-broker')).toThrow(
      InvalidRequestError,
    );
  });

  it('narrowing_never_widens_what_rbac_grants', () => {
    const name = fc.constantFrom('t1', 't2', 'a', 'b', '*');
    const perm = fc
      .tuple(
        fc.constantFrom(
          'stream.publish:stream',
          'stream.subscribe:stream',
          'stream.manage:stream',
          'cache.read:cache',
          'namespace.manage:namespace',
          'tenant.manage:tenant',
          'group.consume:group',
        ),
        fc.array(name, { minLength: 4, maxLength: 4 }),
      )
      .map(([head, segs]) => {
        const depth = { stream: 3, cache: 3, namespace: 2, tenant: 1, group: 4 }[
          head.split(':')[1] as 'stream'
        ];
        return `${head}:${['t1', ...segs].slice(0, depth).join('/')}`;
      })
      .filter((s) => {
        try {
          parsePermission(s);
          return true;
        } catch {
          return false;
        }
      });
    fc.assert(
      fc.property(
        fc.array(perm, { maxLength: 6 }),
        fc.option(fc.array(perm, { maxLength: 6 }), { nil: null }),
        fc.option(
          fc.array(
            perm.map((p) => p.slice(p.indexOf(':') + 1)),
            { maxLength: 4 },
          ),
          {
            nil: null,
          },
        ),
        (held, requested, resources) => {
          const heldSet = PermissionSet.compile('t1', held.map(parsePermission));
          const n = parseNarrowing({ requested, resources }, 'felix-controlplane');
          for (const p of grantedPermissions('t1', held, n)) {
            expect(withinScope(p, heldSet)).toBe(true);
          }
        },
      ),
    );
  });

  it('request_parsers_meet_arbitrary_input_with_their_typed_errors_only', () => {
    const typed = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        const ok =
          err instanceof InvalidPermissionError ||
          err instanceof InvalidRequestError ||
          err instanceof InvalidNameError;
        if (!ok) throw err;
      }
    };
    const text = fc.oneof(
      fc.string({ maxLength: 700 }),
      fc.string({ unit: 'binary', maxLength: 200 }),
    );
    fc.assert(
      fc.property(
        fc.array(text, { maxLength: 4 }),
        fc.array(text, { maxLength: 4 }),
        text,
        (req, res, aud) => {
          typed(() =>
            parseNarrowing({ requested: req, resources: res, audience: aud }, 'felix-broker'),
          );
          typed(() => checkSubject(aud));
          const split = splitRefreshToken(aud);
          if (split !== null) expect(`${split.id}.${split.secret}`).toBe(aud);
        },
      ),
    );
  });
});
