// Goal: the list of environment variables the control plane reads (controlPlaneEnvNames, which
// deployment manifests are checked against) is exactly the list docs/control-plane.md documents.
// Method: collect every `FELIX_*` name in the first cell of the doc's table rows and compare the
// two sets, so a variable read but undocumented, or documented but never read, fails.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { controlPlaneEnvNames } from '../src/env-names.js';

const DOC = join(import.meta.dirname, '..', '..', '..', 'docs', 'control-plane.md');

function documentedNames(): string[] {
  const names = new Set<string>();
  for (const line of readFileSync(DOC, 'utf8').split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1] ?? '';
    for (const m of first.matchAll(/`(FELIX_[A-Z0-9_]+)`/g)) if (m[1]) names.add(m[1]);
  }
  return [...names].sort();
}

describe('control plane environment', () => {
  it('the_control_plane_reads_exactly_the_variables_its_doc_lists', () => {
    const read = controlPlaneEnvNames();
    expect(read.length).toBeGreaterThan(20);
    expect(read).toEqual(documentedNames());
  });
});
