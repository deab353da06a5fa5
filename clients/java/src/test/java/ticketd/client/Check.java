package ticketd.client;

import java.util.Objects;
import java.util.function.BooleanSupplier;

/** Assertions that say what they got and what they wanted. */
final class Check {
    private Check() {}

    static void eq(Object got, Object want, String what) {
        if (!Objects.equals(got, want)) {
            throw new AssertionError(what + ": got " + got + ", want " + want);
        }
    }

    static void that(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void contains(String s, String part, String what) {
        if (s == null || !s.contains(part)) {
            throw new AssertionError(what + ": got \"" + s + "\", want it to contain \"" + part + "\"");
        }
    }

    interface Body {
        void run() throws Exception;
    }

    /** Runs body and returns what it threw, which must be a want. */
    static <T extends Throwable> T fails(Class<T> want, Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            if (want.isInstance(t)) {
                return want.cast(t);
            }
            throw new AssertionError("threw " + t + ", want " + want.getSimpleName(), t);
        }
        throw new AssertionError("returned normally, want " + want.getSimpleName());
    }

    /** Waits up to ms for cond, failing with what. */
    static void eventually(long ms, String what, BooleanSupplier cond) throws InterruptedException {
        long end = System.nanoTime() + ms * 1_000_000;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("not within " + ms + " ms: " + what);
            }
            Thread.sleep(5);
        }
    }
}
