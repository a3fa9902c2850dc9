// Goal: CPU time is read from /proc/<pid>/stat exactly as proc(5) lays it out, even when the
// command name holds spaces and parentheses, and a malformed line is a typed error. Method:
// parse hand-written stat lines, then this test process's own stat and status files.
import { describe, expect, it } from 'vitest';
import {
  ProcFormatError,
  parseProcStat,
  procCpuSecs,
  rssMiB,
  statCpuSecs,
  statusField,
} from '../src/index.js';

// Fields 3.. of a stat line: state ppid pgrp session tty tpgid flags minflt cminflt majflt
// cmajflt utime stime ...
const rest = 'S 1 2 3 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 11 0';

describe('/proc parser', () => {
  it('utime_and_stime_are_fields_fourteen_and_fifteen_of_a_stat_line', () => {
    expect(parseProcStat(`4242 (node) ${rest}`)).toEqual({ utimeTicks: 250, stimeTicks: 75 });
    expect(statCpuSecs(`4242 (node) ${rest}`)).toBe(3.25);
  });

  it('a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields', () => {
    expect(parseProcStat(`7 (a) b (c) ${rest}`)).toEqual({ utimeTicks: 250, stimeTicks: 75 });
  });

  it('a_stat_line_without_cpu_fields_is_a_proc_format_error', () => {
    expect(() => parseProcStat('4242 node S 1')).toThrow(ProcFormatError);
    expect(() => parseProcStat('4242 (node) S 1 2')).toThrow(ProcFormatError);
  });

  it('a_status_field_reads_its_number_and_an_absent_one_is_nan', () => {
    const status = 'Name:\tnode\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n';
    expect(statusField(status, 'VmRSS')).toBe(102400);
    expect(statusField(status, 'VmSwap')).toBeNaN();
  });

  it('this_process_reads_its_own_cpu_and_memory_from_proc', () => {
    const before = procCpuSecs('self');
    let x = 0;
    const until = performance.now() + 50;
    while (performance.now() < until) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    expect(procCpuSecs('self')).toBeGreaterThanOrEqual(before);
    const mem = rssMiB(process.pid);
    expect(mem.rss).toBeGreaterThan(1);
    expect(mem.peak).toBeGreaterThanOrEqual(mem.rss);
  });
});
