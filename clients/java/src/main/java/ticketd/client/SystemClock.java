package ticketd.client;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** The system's monotonic clock, its timers on the client's scheduler thread. */
final class SystemClock extends Clock {
    private final ScheduledExecutorService scheduler;

    SystemClock(ScheduledExecutorService scheduler) {
        this.scheduler = scheduler;
    }

    @Override
    long nanos() {
        return System.nanoTime();
    }

    @Override
    Runnable schedule(Runnable task, long delayNanos) {
        try {
            ScheduledFuture<?> f = scheduler.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
            return () -> f.cancel(false);
        } catch (RejectedExecutionException closed) {
            return () -> {};
        }
    }
}
