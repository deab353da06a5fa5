package ticketd.client;

import java.util.List;

/**
 * The unit tests as Maven runs them ({@code mvn test}, and every
 * {@code mvn install}): surefire runs the public test* methods of a public
 * class without JUnit (its POJO tests), and this one runs every test of
 * {@link TestRunner}, failing with the names of those that failed. The
 * repository runs TestRunner itself (build.sh test).
 */
public class MavenTest {
    public void testAll() throws Exception {
        List<String> failed = TestRunner.runAll(null);
        if (!failed.isEmpty()) {
            throw new AssertionError("failed: " + String.join(", ", failed));
        }
    }
}
