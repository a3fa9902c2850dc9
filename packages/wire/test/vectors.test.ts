// Goal: the package's vectors pass the `felix-wire-vectors` logic both ways, include the
// reference's named vectors, cover every message type, and the checker really fails on a
// wrong byte or an unknown kind. Method: run the CLI entry on vectors/ and on a scratch copy.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MESSAGE_TYPES, checkVector } from '../src/index.js';
import { checkVectorDirectory, runVectorsCli } from '../src/vectors-cli.js';
import { MESSAGE_SAMPLES } from './samples.js';

const DIR = join(import.meta.dirname, '..', 'vectors');
const REFERENCE = [
  'publish',
  'subscribe',
  'event',
  'cache_put',
  'cache_get',
  'cache_value',
  'ok',
  'error',
  'auth_ok',
  'auth_with_capabilities',
  'binary_publish_acked',
  'binary_publish_acked_keyed',
  'binary_publish_keyed',
  'binary_publish_ack_ok',
  'binary_publish_ack_error',
];
const scratch = mkdtempSync(join(tmpdir(), 'felix-wire-vectors-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('vectors', () => {
  it('every_package_vector_passes_the_cli_both_ways', () => {
    const lines: string[] = [];
    const code = runVectorsCli([DIR], (line) => lines.push(line));
    const count = readdirSync(DIR).filter((f) => f.endsWith('.json')).length;
    expect(lines.at(-1)).toBe(`${count} passed, 0 failed`);
    expect(code).toBe(0);
    expect(count).toBeGreaterThanOrEqual(40);
  });

  it('the_reference_vectors_are_present_under_their_names', () => {
    const names = checkVectorDirectory(DIR).map((r) => r.name);
    for (const name of REFERENCE) expect(names).toContain(name);
  });

  it('the_samples_cover_every_message_type', () => {
    const sampled = new Set(MESSAGE_SAMPLES.map((m) => m.type));
    for (const type of MESSAGE_TYPES) expect(sampled.has(type as never), type).toBe(true);
  });

  it('a_vector_with_one_wrong_byte_fails_and_the_command_exits_non_zero', () => {
    const text = readFileSync(join(DIR, 'binary_publish_acked_keyed.json'), 'utf8');
    const broken = text.replace('"request_id": 7', '"request_id": 8');
    writeFileSync(join(scratch, 'broken.json'), broken);
    const lines: string[] = [];
    expect(runVectorsCli([scratch], (l) => lines.push(l))).toBe(1);
    expect(lines.at(-1)).toBe('0 passed, 1 failed');
    rmSync(join(scratch, 'broken.json'));
  });

  it('a_vector_of_an_unknown_kind_fails', () => {
    const result = checkVector(
      JSON.stringify({ name: 'x', kind: 'mystery', payload_hex: '', frame_hex: '' }),
    );
    expect(result.ok).toBe(false);
    expect(result.reason).toMatch(/unknown vector kind/);
  });

  it('a_hex_companion_that_differs_from_frame_hex_fails', () => {
    const text = readFileSync(join(DIR, 'ok.json'), 'utf8');
    expect(checkVector(text, '464c5831').ok).toBe(false);
    expect(checkVector(text, readFileSync(join(DIR, 'ok.hex'), 'utf8')).ok).toBe(true);
  });

  it('a_reference_vector_that_writes_null_for_an_absent_field_passes_unchanged', () => {
    // The reference writes the ok ack's absent message as `null` and ends some .hex files
    // with a newline; both are kept byte for byte in vectors/.
    const text = readFileSync(join(DIR, 'binary_publish_ack_ok.json'), 'utf8');
    expect(text).toContain('"message": null');
    const hex = readFileSync(join(DIR, 'ok.hex'), 'utf8');
    expect(hex.endsWith('\n')).toBe(true);
    expect(checkVector(text).ok).toBe(true);
    expect(checkVector(readFileSync(join(DIR, 'ok.json'), 'utf8'), hex).ok).toBe(true);
    // null means absent, not "anything": a message on the ok ack is still a mismatch.
    expect(checkVector(text.replace('"message": null', '"message": "x"')).ok).toBe(false);
  });

  it('an_empty_directory_is_a_failure', () => {
    expect(runVectorsCli([scratch], () => {})).toBe(1);
  });
});
