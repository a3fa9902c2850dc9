/**
 * The real Io over node:fs/promises (and `writeSync` for `writeNow`): the only file that
 * imports node:fs.
 */
import { writeSync } from 'node:fs';
import { join } from 'node:path';
import {
  constants,
  type FileHandle,
  access,
  link,
  rename,
  mkdir,
  mkdtemp,
  open,
  readdir,
  rm,
  stat,
  unlink,
} from 'node:fs/promises';
import { PREALLOCATE_WRITE_BYTES } from '../limits.js';
import type { Io, IoFile, OpenMode } from './io.js';

/** Shared source of zeros for preallocation, made on first use; nothing writes into it. */
let zeros: Uint8Array | undefined;

const FLAGS: Record<OpenMode, number> = {
  read: constants.O_RDONLY,
  write: constants.O_RDWR,
  create: constants.O_RDWR | constants.O_CREAT | constants.O_EXCL,
  replace: constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC,
};

class NodeFile implements IoFile {
  constructor(
    readonly path: string,
    private readonly handle: FileHandle,
  ) {}

  async read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<number> {
    const { bytesRead } = await this.handle.read(buffer, offset, length, position);
    return bytesRead;
  }

  async write(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<number> {
    const { bytesWritten } = await this.handle.write(buffer, offset, length, position);
    return bytesWritten;
  }

  writeNow(buffer: Uint8Array, offset: number, length: number, position: number): number {
    return writeSync(this.handle.fd, buffer, offset, length, position);
  }

  datasync(): Promise<void> {
    return this.handle.datasync();
  }

  async preallocate(position: number, length: number): Promise<boolean> {
    zeros ??= new Uint8Array(PREALLOCATE_WRITE_BYTES);
    try {
      for (let done = 0; done < length; ) {
        const n = Math.min(zeros.length, length - done);
        const { bytesWritten } = await this.handle.write(zeros, 0, n, position + done);
        if (bytesWritten <= 0) return false;
        done += bytesWritten;
      }
    } catch {
      return false;
    }
    return true;
  }

  truncate(length: number): Promise<void> {
    return this.handle.truncate(length);
  }

  async size(): Promise<number> {
    return (await this.handle.stat()).size;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

export class NodeIo implements Io {
  async open(path: string, mode: OpenMode): Promise<IoFile> {
    return new NodeFile(path, await open(path, FLAGS[mode], 0o644));
  }

  readdir(path: string): Promise<string[]> {
    return readdir(path);
  }

  async mkdir(path: string): Promise<boolean> {
    try {
      await mkdir(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
  }

  unlink(path: string): Promise<void> {
    return unlink(path);
  }

  rename(from: string, to: string): Promise<void> {
    return rename(from, to);
  }

  async exists(path: string): Promise<boolean> {
    try {
      await access(path);
      return true;
    } catch {
      return false;
    }
  }

  makeTempDir(parent: string, prefix: string): Promise<string> {
    return mkdtemp(join(parent, prefix));
  }

  removeTree(path: string): Promise<void> {
    return rm(path, { recursive: true, force: true });
  }

  link(existing: string, path: string): Promise<void> {
    return link(existing, path);
  }

  async dirId(path: string): Promise<string> {
    const st = await stat(path, { bigint: true });
    return `${st.dev}:${st.ino}`;
  }

  async syncDir(path: string): Promise<void> {
    const handle = await open(path, constants.O_RDONLY);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}

/** The process-wide real Io. */
export const nodeIo: Io = new NodeIo();
