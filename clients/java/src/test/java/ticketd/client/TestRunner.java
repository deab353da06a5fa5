package ticketd.client;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;

/**
 * Runs the @Test methods of the test classes, each on a fresh instance with a
 * time limit, and ends with the line "N passed, N failed" (exit 1 if any
 * failed, or if none ran). Arguments: an optional regular expression that
 * test names (Class.method) must contain a match of.
 */
public final class TestRunner {
    static final Class<?>[] CLASSES = {SettingsTest.class, JsonTest.class, WireTest.class, ClientTest.class, FailoverTest.class,
            AccessTest.class, StrictTest.class, LifecycleTest.class, PomTest.class};
    static final long LIMIT_MS = 60_000;

    public static void main(String[] args) throws Exception {
        List<String> failures = runAll(args.length > 0 ? Pattern.compile(args[0]) : null);
        System.exit(failures.isEmpty() ? 0 : 1);
    }

    /**
     * Runs the tests whose names contain a match of only (null: all), prints
     * a line for each and the count, and returns the names of those that
     * failed ("no test ran" when none did).
     */
    static List<String> runAll(Pattern only) throws InterruptedException {
        int passed = 0, failed = 0;
        List<String> failures = new ArrayList<>();
        for (Class<?> cls : CLASSES) {
            Method[] ms = cls.getDeclaredMethods();
            Arrays.sort(ms, Comparator.comparing(Method::getName));
            for (Method m : ms) {
                if (!m.isAnnotationPresent(Test.class)) {
                    continue;
                }
                String name = cls.getSimpleName() + "." + m.getName();
                if (only != null && !only.matcher(name).find()) {
                    continue;
                }
                long t0 = System.nanoTime();
                Throwable err = run(cls, m);
                double s = (System.nanoTime() - t0) / 1e9;
                if (err == null) {
                    passed++;
                    System.out.printf("ok   %s (%.2fs)%n", name, s);
                } else {
                    failed++;
                    failures.add(name);
                    System.out.printf("FAIL %s (%.2fs)%n", name, s);
                    err.printStackTrace(System.out);
                }
            }
        }
        if (!failures.isEmpty()) {
            System.out.println("failed: " + String.join(", ", failures));
        }
        System.out.println(passed + " passed, " + failed + " failed");
        if (passed + failed == 0) {
            failures.add("no test ran");
        }
        return failures;
    }

    private static Throwable run(Class<?> cls, Method m) throws InterruptedException {
        AtomicReference<Throwable> err = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                Object o = cls.getDeclaredConstructor().newInstance();
                m.setAccessible(true);
                m.invoke(o);
            } catch (InvocationTargetException e) {
                err.set(e.getCause());
            } catch (Throwable e) {
                err.set(e);
            }
        }, "test-" + m.getName());
        t.setDaemon(true);
        t.start();
        t.join(LIMIT_MS);
        if (t.isAlive()) {
            AssertionError e = new AssertionError("still running after " + LIMIT_MS + " ms");
            e.setStackTrace(t.getStackTrace());
            t.interrupt();
            return e;
        }
        return err.get();
    }
}
