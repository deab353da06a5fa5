package ticketd.client;

import java.util.List;
import java.util.regex.Pattern;

/**
 * The unit tests as Maven runs them ({@code mvn test}, and every
 * {@code mvn install}): surefire runs the public test* methods of a public
 * class without JUnit (its POJO tests), and this one runs every test of
 * {@link TestRunner}, failing with the names of those that failed. The
 * repository runs TestRunner itself (build.sh test). {@code -Dticketd.tests=REGEX}
 * runs only the tests whose Class.method it matches, as build.sh test REGEX
 * does (the docs test runs the Maven build so, with one).
 */
public class MavenTest {
    public void testAll() throws Exception {
        String only = System.getProperty("ticketd.tests", "");
        List<String> failed = TestRunner.runAll(only.isEmpty() ? null : Pattern.compile(only));
        if (!failed.isEmpty()) {
            throw new AssertionError("failed: " + String.join(", ", failed));
        }
    }
}
