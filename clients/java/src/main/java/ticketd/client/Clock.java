package ticketd.client;

/**
 * The client's time: a monotonic reading in nanoseconds and timers on the same
 * clock. Tests inject a fake one; the client's own reads System.nanoTime, which
 * never follows the wall clock.
 */
abstract class Clock {
    /** Nanoseconds on a monotonic clock, from an arbitrary origin (compare by difference). */
    abstract long nanos();

    /** Runs task after delayNanos on this clock, and returns what cancels it. */
    abstract Runnable schedule(Runnable task, long delayNanos);
}
