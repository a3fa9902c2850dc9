/**
 * The storage fault file (`testing.storage_fault_file`, docs/reliability.md "Fault seams in the
 * broker"): when set, every log the broker opens (streams, caches, counters, group cursors and
 * dead letters) goes through @felix/storage's FaultFileIo over the real file system. Unset:
 * no wrapper at all, the logs use their default Io.
 */
import { FaultFileIo, type Io, nodeIo } from '@felix/storage';
import type { Logger } from 'pino';

/** The fault Io the config names, its baseline reading taken; undefined when unset. */
export async function storageIoFor(path: string | null, log: Logger): Promise<Io | undefined> {
  if (path === null || path.trim() === '') return undefined;
  log.warn({ storage_fault_file: path }, 'fault injection enabled');
  let warned = 0;
  const io = new FaultFileIo(nodeIo, path, {
    onIgnored: (lines) => {
      // Once per change of the count: the file is re-read up to 20 times a second.
      if (lines === warned) return;
      warned = lines;
      log.warn({ storage_fault_file: path, ignored: lines }, 'lines ignored');
    },
  });
  await io.start();
  return io;
}
