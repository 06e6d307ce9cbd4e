package dev.tare.worker;

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * The worker's connection to tare: the inherited socket named by {@code TARE_WORKER_FD}.
 *
 * <p>The JVM has no public way to adopt an inherited descriptor other than 0-2
 * ({@code System.inheritedChannel()} only looks at fd 0), and opening {@code /proc/self/fd/N}
 * fails with ENXIO for a socket. So the client fills a {@link FileDescriptor} with the number and
 * reads and writes it through FileInputStream/FileOutputStream (plain read(2)/write(2), which work
 * on a stream socket), in this order of preference:
 *
 * <ol>
 *   <li>reflection on {@code FileDescriptor.fd}, which needs {@code --add-opens
 *       java.base/java.io=ALL-UNNAMED} (an executable jar can say {@code Add-Opens: java.base/java.io}
 *       in its manifest, as the blur example does);
 *   <li>{@code sun.misc.Unsafe} (module jdk.unsupported, open to everyone through JDK 17..22 at
 *       least) to write the same field without flags;
 *   <li>if both are refused (a future JDK) and tare set {@code TARE_WORKER_PATH}, a Unix-domain
 *       socket path, the client connects there instead (JDK 16+ UnixDomainSocketAddress). That
 *       variable is a proposed additive extension of the protocol; tare version 1 does not set it.
 * </ol>
 *
 * <p>Hygiene the protocol asks for, as far as Java allows: FD_CLOEXEC cannot be set from Java, but
 * the JDK's process launcher closes every descriptor above 2 in children it starts, so the socket
 * does not leak into them; the JVM's environment is read-only, so {@code TARE_WORKER_FD} cannot
 * be removed: a child started with {@code ProcessBuilder} sees it unless the caller removes it
 * from {@code ProcessBuilder.environment()}.
 */
final class Transport {
    final InputStream in;
    final OutputStream out;
    /** How the connection was made, for diagnostics and tests. */
    final String how;

    private Transport(InputStream in, OutputStream out, String how) {
        this.in = in;
        this.out = out;
        this.how = how;
    }

    /** Connects from the environment; throws with a one-line reason when it cannot. */
    static Transport fromEnvironment(String fdText, String path) throws IOException {
        String why = null;
        if (fdText != null) {
            int fd;
            try {
                fd = Integer.parseInt(fdText.trim());
                if (fd < 0) throw new NumberFormatException();
            } catch (NumberFormatException e) {
                throw new IOException("TARE_WORKER_FD='" + fdText + "' is not a file descriptor number; unset it to run standalone");
            }
            // The JVM may have reused a number tare's socket never held: on Linux, check it is one.
            Path link = Paths.get("/proc/self/fd/" + fd);
            if (Files.isDirectory(Paths.get("/proc/self/fd"))) {
                String target;
                try {
                    target = Files.readSymbolicLink(link).toString();
                } catch (IOException e) {
                    target = "not open";
                }
                if (!target.startsWith("socket:")) {
                    throw new IOException("TARE_WORKER_FD=" + fd + " is not an inherited socket (" + target
                            + "); start the worker from tare, or unset TARE_WORKER_FD to run standalone");
                }
            }
            try {
                return adopt(fd);
            } catch (ReflectiveOperationException | RuntimeException e) {
                why = e.toString();
            }
        }
        if (path != null && !path.isEmpty()) {
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            ch.connect(UnixDomainSocketAddress.of(path));
            return new Transport(Channels.newInputStream(ch), Channels.newOutputStream(ch), "path");
        }
        throw new IOException("cannot adopt TARE_WORKER_FD=" + fdText + " (" + why
                + "); run java with --add-opens java.base/java.io=ALL-UNNAMED");
    }

    private static Transport adopt(int fd) throws ReflectiveOperationException {
        FileDescriptor desc = new FileDescriptor();
        Field field = FileDescriptor.class.getDeclaredField("fd");
        String how;
        try {
            field.setAccessible(true);
            field.setInt(desc, fd);
            how = "fd-reflection";
        } catch (RuntimeException closed) { // InaccessibleObjectException: java.io not opened
            Field theUnsafe = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
            theUnsafe.setAccessible(true);
            Object unsafe = theUnsafe.get(null);
            long offset = (long) unsafe.getClass().getMethod("objectFieldOffset", Field.class).invoke(unsafe, field);
            unsafe.getClass().getMethod("putInt", Object.class, long.class, int.class).invoke(unsafe, desc, offset, fd);
            how = "fd-unsafe";
        }
        if (!desc.valid()) throw new IllegalStateException("descriptor " + fd + " did not take");
        return new Transport(new FileInputStream(desc), new FileOutputStream(desc), how);
    }
}
