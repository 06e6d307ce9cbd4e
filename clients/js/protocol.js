// The line codec of tare's worker protocol, version 1 (docs/protocol.md): one message is one
// line `verb key=value ...` ending in "\n", values percent-encoded. Hand-written: it is a few
// dozen lines and the package has no runtime dependencies. Knows nothing of kernels.

/** The protocol's limit on one message, newline included. */
export const MAX_LINE = 65536;

const KEY = /^[a-z0-9_.-]+$/;
const NAME = /^[A-Za-z0-9_./-]+$/;
const UNRESERVED = /^[A-Za-z0-9\-._~:/,+]$/;

export const validKey = (k) => KEY.test(k);
export const validName = (n) => typeof n === 'string' && NAME.test(n);

/** Percent-encodes every UTF-8 byte of `s` outside the unreserved set. */
export function encodeValue(s) {
  let out = '';
  for (const byte of Buffer.from(String(s), 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte < 128 && UNRESERVED.test(c) ? c : '%' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

export class BadLine extends Error {}

const HEX = /^[0-9A-Fa-f]{2}$/;

/** Undoes encodeValue; upper- or lowercase hex digits are accepted. */
export function decodeValue(s) {
  if (!s.includes('%')) return s;
  const raw = Buffer.from(s, 'utf8');
  const bytes = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== 0x25) {
      bytes.push(raw[i]);
      continue;
    }
    const hex = raw.subarray(i + 1, i + 3).toString('latin1');
    if (!HEX.test(hex)) throw new BadLine(`bad %-escape in '${s}'`);
    bytes.push(parseInt(hex, 16));
    i += 2;
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Parses one line (without its newline) into {verb, fields: Map}. */
export function decodeLine(line) {
  if (line === '') throw new BadLine('empty line');
  const parts = line.split(' ');
  const verb = parts[0];
  if (!validKey(verb)) throw new BadLine(`bad verb '${verb}'`);
  const fields = new Map();
  for (const p of parts.slice(1)) {
    const eq = p.indexOf('=');
    if (eq < 0) throw new BadLine(`field '${p}' has no '='`);
    const k = p.slice(0, eq);
    if (!validKey(k)) throw new BadLine(`bad key '${k}'`);
    if (fields.has(k)) throw new BadLine(`key '${k}' repeats`);
    fields.set(k, decodeValue(p.slice(eq + 1)));
  }
  return { verb, fields };
}

/** One line with its newline: verb then [key, value] pairs. */
export function encodeLine(verb, pairs = []) {
  let out = verb;
  for (const [k, v] of pairs) out += ` ${k}=${encodeValue(v)}`;
  return out + '\n';
}

/** A number in the JSON syntax; the caller ensures it is finite. */
export function formatNumber(v) {
  return typeof v === 'bigint' ? v.toString() : JSON.stringify(v);
}

/**
 * Splits a byte stream into lines of at most MAX_LINE bytes. push() returns the complete lines
 * so far; an over-long line throws BadLine.
 */
export class LineSplitter {
  constructor() {
    this.pending = [];
    this.pendingLength = 0;
  }

  push(chunk) {
    const lines = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      if (this.pendingLength + piece.length + 1 > MAX_LINE) throw new BadLine('line longer than 65536 bytes');
      this.pending.push(piece);
      lines.push(Buffer.concat(this.pending).toString('utf8'));
      this.pending = [];
      this.pendingLength = 0;
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length) {
      this.pendingLength += rest.length;
      if (this.pendingLength >= MAX_LINE) throw new BadLine('line longer than 65536 bytes');
      this.pending.push(Buffer.from(rest));
    }
    return lines;
  }

  /** True when bytes of an unfinished line are waiting. */
  get partial() {
    return this.pendingLength > 0;
  }
}
