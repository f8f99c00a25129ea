import type { LoggerService } from '@nestjs/common';

/** Keeps every line the app logs, to read what it said about a message. */
export class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log = (message: unknown) => void this.lines.push(`LOG ${String(message)}`);
  error = (message: unknown) => void this.lines.push(`ERROR ${String(message)}`);
  warn = (message: unknown) => void this.lines.push(`WARN ${String(message)}`);
}
