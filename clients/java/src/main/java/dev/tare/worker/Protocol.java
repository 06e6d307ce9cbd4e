package dev.tare.worker;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The line codec of tare's worker protocol, version 1 (docs/protocol.md): one message is one line
 * {@code verb key=value ...} ending in a newline, values percent-encoded. Hand-written because it
 * is a few dozen lines and the library has no runtime dependencies. Knows nothing of kernels.
 */
final class Protocol {
    /** The protocol's limit on one message, newline included. */
    static final int MAX_LINE = 65536;

    private Protocol() {}

    /** One decoded line: a verb and its fields in order. */
    static final class Message {
        final String verb;
        final Map<String, String> fields;

        Message(String verb, Map<String, String> fields) {
            this.verb = verb;
            this.fields = fields;
        }

        String get(String key) {
            return fields.get(key);
        }
    }

    /** A line that breaks the framing or encoding rules. */
    static final class BadLine extends Exception {
        BadLine(String message) {
            super(message);
        }
    }

    private static boolean unreserved(int c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                || "-._~:/,+".indexOf(c) >= 0;
    }

    static boolean validKey(String k) {
        if (k.isEmpty()) return false;
        for (int i = 0; i < k.length(); i++) {
            char c = k.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')) return false;
        }
        return true;
    }

    static boolean validName(String k) {
        if (k == null || k.isEmpty()) return false;
        for (int i = 0; i < k.length(); i++) {
            char c = k.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '_' || c == '.' || c == '/' || c == '-')) return false;
        }
        return true;
    }

    /** Percent-encodes the UTF-8 bytes of {@code s} outside the unreserved set. */
    static String encodeValue(String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        StringBuilder b = new StringBuilder(bytes.length);
        final String hex = "0123456789ABCDEF";
        for (byte x : bytes) {
            int c = x & 0xff;
            if (unreserved(c)) {
                b.append((char) c);
            } else {
                b.append('%').append(hex.charAt(c >> 4)).append(hex.charAt(c & 15));
            }
        }
        return b.toString();
    }

    private static int unhex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    static String decodeValue(String s) throws BadLine {
        if (s.indexOf('%') < 0) return s;
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        byte[] raw = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < raw.length; i++) {
            if (raw[i] != '%') {
                out.write(raw[i]);
                continue;
            }
            if (i + 2 >= raw.length) throw new BadLine("truncated %-escape in '" + s + "'");
            int hi = unhex((char) raw[i + 1]);
            int lo = unhex((char) raw[i + 2]);
            if (hi < 0 || lo < 0) throw new BadLine("bad %-escape in '" + s + "'");
            out.write(hi << 4 | lo);
            i += 2;
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    static Message decode(String line) throws BadLine {
        if (line.isEmpty()) throw new BadLine("empty line");
        String[] parts = line.split(" ", -1);
        if (!validKey(parts[0])) throw new BadLine("bad verb '" + parts[0] + "'");
        Map<String, String> fields = new LinkedHashMap<>();
        for (int i = 1; i < parts.length; i++) {
            String p = parts[i];
            int eq = p.indexOf('=');
            if (eq < 0) throw new BadLine("field '" + p + "' has no '='");
            String k = p.substring(0, eq);
            if (!validKey(k)) throw new BadLine("bad key '" + k + "'");
            if (fields.containsKey(k)) throw new BadLine("key '" + k + "' repeats");
            fields.put(k, decodeValue(p.substring(eq + 1)));
        }
        return new Message(parts[0], fields);
    }

    /** One line: verb then key/value pairs ({@code kv} alternates key, value), with its newline. */
    static String encode(String verb, List<String> kv) {
        StringBuilder b = new StringBuilder(verb);
        for (int i = 0; i + 1 < kv.size(); i += 2) {
            b.append(' ').append(kv.get(i)).append('=').append(encodeValue(kv.get(i + 1)));
        }
        return b.append('\n').toString();
    }

    static String encode(String verb, String... kv) {
        return encode(verb, List.of(kv));
    }

    /** Builds key/value lists for {@link #encode(String, List)}. */
    static final class Fields {
        final List<String> kv = new ArrayList<>();

        Fields put(String k, String v) {
            kv.add(k);
            kv.add(v);
            return this;
        }
    }

    /** Formats a double in the JSON number syntax (no NaN or infinities: the caller checks). */
    static String number(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e15) return Long.toString((long) v);
        return Double.toString(v); // e.g. 2043.2024388212296 or 1.5E-5: JSON accepts both
    }

    /** Reads one line without its newline; null at a clean end of input. */
    static String readLine(InputStream in) throws IOException, BadLine {
        ByteArrayOutputStream buf = new ByteArrayOutputStream(128);
        while (true) {
            int c = in.read();
            if (c < 0) {
                if (buf.size() == 0) return null;
                throw new IOException("the connection ended in the middle of a line");
            }
            if (c == '\n') return buf.toString(StandardCharsets.UTF_8);
            buf.write(c);
            if (buf.size() >= MAX_LINE) throw new BadLine("line longer than 65536 bytes");
        }
    }
}
