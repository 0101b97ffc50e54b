/*
 * Kafka's metadata shell driven for the tests: many files and many commands in one JVM.
 *
 * Reads requests from stdin, one per line, fields separated by tabs:
 *   load <file>                            load a snapshot or segment as `kafka-metadata-shell --snapshot <file>` does
 *                                          (MetadataShell.run, then waits until the file is read and the image settled)
 *   run <interactive: 0|1> <word>...       parse and run one command line on the loaded file, as the shell does
 *                                          (Commands(interactive).parseCommand(words).run(no shell, writer, state));
 *                                          the working directory carries over between runs of one file
 *   columns <width> <entry>...             `ls`'s layout of entries on a terminal that wide
 *                                          (LsCommandHandler.printEntries, as the interactive shell's ls calls it)
 * A file the shell waits for forever (see load) fails to load after 60 s.
 * Answers each request with a line "#<status> <n>" followed by n bytes (UTF-8) of what the command printed: its
 * writer's output after anything printed to System.out (argparse4j prints -h help there). The status is "ok",
 * or "error:<message>" when the command threw (Kafka's shell then prints "Unexpected error: <message>").
 */

import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.shell.MetadataShell;
import org.apache.kafka.shell.command.Commands;
import org.apache.kafka.shell.command.LsCommandHandler;
import org.apache.kafka.shell.state.MetadataShellState;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

public class ShellDriver {
    private static final long LOAD_SECONDS = 60;

    /** Where System.out goes: the output of the command being run, else nowhere. */
    private static final class Switch extends OutputStream {
        volatile OutputStream target = OutputStream.nullOutputStream();

        @Override
        public void write(int b) throws java.io.IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] bytes, int offset, int length) throws java.io.IOException {
            target.write(bytes, offset, length);
        }
    }

    private static final Switch OUT = new Switch();

    private static Object field(Object target, String name) throws Exception {
        Field f = target.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }

    /**
     * Load the file as MetadataShell.run does, and wait until the shell holds what it shows: the reader is done and
     * the loader applied the file. MetadataShell.run itself waits for the loader's last applied offset, which the
     * loader sets only when it publishes, and which it can leave unset when it applies the file's last batch before
     * the reader announced the file's end (then the real shell waits forever with the image in hand, or, when the
     * image is one it cannot publish, with its empty image: seen with 3.9 on segments and snapshots and with 4.1 on
     * snapshots). An image the loader cannot publish (none at all without a metadata.version in Kafka 4, or one it
     * cannot write at its own metadata.version) leaves the shell showing the empty image it started with: that
     * outcome is taken once the loader has applied the file and the shell's image stayed the empty one for 3 s. A
     * file the loader applies nothing of (no metadata records) is an error after 60 s: the shell waits forever.
     */
    private static void load(MetadataShell shell) throws Exception {
        MetadataShellState state = (MetadataShellState) field(shell, "state");
        Object initial = state.root();
        CompletableFuture<Void> returned = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                shell.run(List.of(""));  // a command line that prints nothing, whenever it runs
                returned.complete(null);
            } catch (Throwable e) {
                returned.completeExceptionally(e);
            }
        });
        thread.setDaemon(true);
        thread.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LOAD_SECONDS);
        while (!returned.isDone() && !(readerDone(shell) && (state.root() != initial || applied(shell)))) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no image after " + LOAD_SECONDS + " s (the shell waits forever)");
            }
            Thread.sleep(20);
        }
        if (returned.isCompletedExceptionally()) {
            returned.get();
        }
        Object root = state.root();
        long stableSince = System.nanoTime();
        while (System.nanoTime() - stableSince < TimeUnit.MILLISECONDS.toNanos(root == initial ? 3000 : 300)) {
            Thread.sleep(20);
            if (state.root() != root) {
                root = state.root();
                stableSince = System.nanoTime();
            }
        }
    }

    /** Whether the shell's loader has applied a record of the file (its image is past the empty image's offset). */
    private static boolean applied(MetadataShell shell) throws Exception {
        Object loader = field(shell, "loader");
        return loader != null && ((MetadataImage) field(loader, "image")).offset() >= 0;
    }

    private static boolean readerDone(MetadataShell shell) throws Exception {
        Object reader = field(shell, "snapshotFileReader");
        return reader != null && ((CompletableFuture<?>) field(reader, "caughtUpFuture")).isDone();
    }

    public static void main(String[] args) throws Exception {
        OutputStream out = new FileOutputStream(FileDescriptor.out);
        // System.out: the running command's output, never closed (the shell's run closes it when done)
        System.setOut(new PrintStream(OUT, true, StandardCharsets.UTF_8) {
            @Override
            public void close() {
                flush();
            }
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        MetadataShell shell = null;
        MetadataShellState state = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            String status = "ok";
            ByteArrayOutputStream printed = new ByteArrayOutputStream();
            StringWriter written = new StringWriter();
            try {
                if (fields[0].equals("load")) {
                    close(shell);
                    state = null;
                    shell = new MetadataShell.Builder().setSnapshotPath(fields[1]).build();
                    load(shell);
                    state = (MetadataShellState) field(shell, "state");
                } else if (fields[0].equals("run")) {
                    if (state == null) {
                        throw new IllegalStateException("no file loaded");
                    }
                    boolean interactive = fields[1].equals("1");
                    List<String> words = Arrays.asList(fields).subList(2, fields.length);
                    PrintWriter writer = new PrintWriter(written);
                    OUT.target = printed;
                    try {
                        new Commands(interactive).parseCommand(words).run(Optional.empty(), writer, state);
                    } finally {
                        writer.flush();
                        System.out.flush();
                        OUT.target = OutputStream.nullOutputStream();
                    }
                } else if (fields[0].equals("columns")) {
                    Method print = LsCommandHandler.class.getDeclaredMethod(
                        "printEntries", PrintWriter.class, String.class, OptionalInt.class, List.class);
                    print.setAccessible(true);
                    PrintWriter writer = new PrintWriter(written);
                    List<String> entries = Arrays.asList(fields).subList(2, fields.length);
                    print.invoke(null, writer, "", OptionalInt.of(Integer.parseInt(fields[1])), entries);
                    writer.flush();
                } else {
                    throw new IllegalArgumentException("unknown request " + fields[0]);
                }
            } catch (Throwable e) {
                String message = e.getMessage() == null ? "" : e.getMessage();
                status = "error:" + message.replace('\n', ' ');
            }
            byte[] answer = (printed.toString(StandardCharsets.UTF_8) + written).getBytes(StandardCharsets.UTF_8);
            out.write(("#" + status + " " + answer.length + "\n").getBytes(StandardCharsets.UTF_8));
            out.write(answer);
            out.flush();
        }
        close(shell);
        System.exit(0);
    }

    /** Close a shell; what its closing throws (a loader that never started, say) is not an answer. */
    private static void close(MetadataShell shell) {
        if (shell == null) {
            return;
        }
        try {
            shell.close();
        } catch (Throwable e) {
            System.err.println("closing the shell: " + e);
        }
    }
}
