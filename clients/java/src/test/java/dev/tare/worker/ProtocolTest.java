package dev.tare.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ProtocolTest {
    @Test
    void valuesRoundTrip() throws Exception {
        String in = "a b%c\n=é~:/,+-._";
        String enc = Protocol.encodeValue(in);
        assertEquals("a%20b%25c%0A%3D%C3%A9~:/,+-._", enc);
        assertEquals(in, Protocol.decodeValue(enc.toLowerCase().replace("a%20b", "a%20b")));
        for (String bad : new String[] {"%", "%4", "%G0"}) {
            assertThrows(Protocol.BadLine.class, () -> Protocol.decodeValue(bad), bad);
        }
    }

    @Test
    void lines() throws Exception {
        assertEquals("sample loops=3 m.x=1.5e-3\n", Protocol.encode("sample", "loops", "3", "m.x", "1.5e-3"));
        Protocol.Message m = Protocol.decode("setup kernel=blur p.size=64 note=");
        assertEquals("setup", m.verb);
        assertEquals("64", m.get("p.size"));
        assertEquals("", m.get("note"));
        for (String bad : new String[] {"", "verb  x=1", "verb x", "Verb x=1", "v X=1", "v a=1 a=2"}) {
            assertThrows(Protocol.BadLine.class, () -> Protocol.decode(bad), bad);
        }
        assertEquals("2043.2024388212296", Protocol.number(2043.2024388212296));
        assertEquals("12", Protocol.number(12.0));
    }

    @Test
    void longLineIsRefused() throws Exception {
        byte[] big = ("x".repeat(Protocol.MAX_LINE + 10) + "\n").getBytes(StandardCharsets.UTF_8);
        assertThrows(Protocol.BadLine.class, () -> Protocol.readLine(new ByteArrayInputStream(big)));
        // The edge: 65536 bytes with the newline are accepted, 65537 refused.
        byte[] edge = ("x".repeat(Protocol.MAX_LINE - 1) + "\n").getBytes(StandardCharsets.UTF_8);
        assertEquals(Protocol.MAX_LINE - 1, Protocol.readLine(new ByteArrayInputStream(edge)).length());
        byte[] over = ("x".repeat(Protocol.MAX_LINE) + "\n").getBytes(StandardCharsets.UTF_8);
        assertThrows(Protocol.BadLine.class, () -> Protocol.readLine(new ByteArrayInputStream(over)));
    }
}
