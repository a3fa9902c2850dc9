/** The broker's pino logger: JSON lines on stdout. */
import { pino, type Logger } from 'pino';
import type { LogLevel } from './config/types.js';

export function createLogger(level: LogLevel): Logger {
  return pino({ level, base: { service: 'felix-broker', pid: process.pid } });
}
