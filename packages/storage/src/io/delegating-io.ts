/**
 * An Io and an IoFile that pass every call to the ones they wrap: the base of a wrapper that
 * changes a few calls (fault-file-io.ts), so each wrapper names only what it changes.
 */
import type { Io, IoFile, OpenMode } from './io.js';

export class DelegatingIo implements Io {
  constructor(protected readonly inner: Io) {}

  open(path: string, mode: OpenMode): Promise<IoFile> {
    return this.inner.open(path, mode);
  }
  readdir(path: string): Promise<string[]> {
    return this.inner.readdir(path);
  }
  mkdir(path: string): Promise<boolean> {
    return this.inner.mkdir(path);
  }
  unlink(path: string): Promise<void> {
    return this.inner.unlink(path);
  }
  rename(from: string, to: string): Promise<void> {
    return this.inner.rename(from, to);
  }
  exists(path: string): Promise<boolean> {
    return this.inner.exists(path);
  }
  syncDir(path: string): Promise<void> {
    return this.inner.syncDir(path);
  }
  makeTempDir(parent: string, prefix: string): Promise<string> {
    return this.inner.makeTempDir(parent, prefix);
  }
  removeTree(path: string): Promise<void> {
    return this.inner.removeTree(path);
  }
  link(existing: string, path: string): Promise<void> {
    return this.inner.link(existing, path);
  }
  dirId(path: string): Promise<string> {
    return this.inner.dirId(path);
  }
}

export class DelegatingFile implements IoFile {
  readonly writeNow:
    | ((buffer: Uint8Array, offset: number, length: number, position: number) => number)
    | undefined;

  constructor(protected readonly inner: IoFile) {
    // Present exactly when the wrapped file has it, so the log takes the same write path.
    this.writeNow = inner.writeNow?.bind(inner);
  }
  get path(): string {
    return this.inner.path;
  }
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    return this.inner.read(buffer, offset, length, position);
  }
  write(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    return this.inner.write(buffer, offset, length, position);
  }
  datasync(): Promise<void> {
    return this.inner.datasync();
  }
  preallocate(position: number, length: number): Promise<boolean> {
    return this.inner.preallocate(position, length);
  }
  truncate(length: number): Promise<void> {
    return this.inner.truncate(length);
  }
  size(): Promise<number> {
    return this.inner.size();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
