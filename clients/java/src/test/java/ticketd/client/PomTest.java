package ticketd.client;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.xpath.XPath;
import javax.xml.xpath.XPathFactory;
import org.w3c.dom.Document;

/** pom.xml runs the tests a Maven user builds with, and skips none (the repository builds without Maven). */
class PomTest {
    @Test
    void mavenRunsTheTests() throws Exception {
        // Tests run in clients/java (build.sh, and Maven's basedir).
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(false);
        Document pom = f.newDocumentBuilder().parse(Path.of("pom.xml").toFile());
        XPath x = XPathFactory.newInstance().newXPath();
        for (String skip : new String[] {"maven.test.skip", "skipTests", "maven.test.skip.exec", "skipExec"}) {
            Check.eq(x.evaluate("count(//" + skip + ")", pom), "0", "<" + skip + "> elements in pom.xml");
        }
        String plugin = "/project/build/pluginManagement/plugins/plugin[artifactId='maven-surefire-plugin']";
        Check.eq(x.evaluate(plugin + "/configuration/includes/include", pom), "**/" + MavenTest.class.getSimpleName() + ".java",
                "surefire's include");
        Check.eq(x.evaluate(plugin + "/configuration/failIfNoTests", pom), "true", "surefire's failIfNoTests");
        // The version is a property, which a build without Maven Central
        // gives as the surefire it has (docs/clients/java.md).
        Check.eq(x.evaluate(plugin + "/version", pom), "${surefire.version}", "surefire's version");
        String[] v = x.evaluate("/project/properties/surefire.version", pom).split("\\.");
        Check.that(Integer.parseInt(v[0]) * 100 + Integer.parseInt(v[1]) < 306,
                "surefire " + String.join(".", v) + ": POJO tests need one before 3.6.0");
        // What surefire wants of a POJO test: a public class with a public
        // constructor of no arguments, and public void test* methods.
        Check.that(Modifier.isPublic(MavenTest.class.getModifiers()), "MavenTest is not public");
        MavenTest.class.getConstructor();
        Method m = MavenTest.class.getMethod("testAll");
        Check.eq(m.getReturnType(), void.class, "testAll's return type");
    }
}
