package doccheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// javaDoc is the Java client's page: its Maven recipe is run here.
const javaDoc = "docs/clients/java.md"

// debianRepo is Debian's Maven repository, where its packages of Maven's
// plugins put them.
const debianRepo = "/usr/share/maven-repo"

// TestJavaUnit: a snippet's imports go first, the rest into a method.
func TestJavaUnit(t *testing.T) {
	got := JavaUnit(Block{Body: []string{"import a.B;", "", "B b = B.make();", "  b.go();"}}, "S1")
	want := "import a.B;\n\nclass S1 {\n    static void snippet() throws Exception {\n        \n        B b = B.make();\n          b.go();\n    }\n}\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestJavaSnippets: every java block of the docs compiles as shown (its
// imports written in it) against the Java client's jar, which the JDK
// alone builds.
func TestJavaSnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Java client: runs in make test, not under -short")
	}
	root, all := docs(t)
	if _, err := exec.LookPath("javac"); err != nil {
		t.Fatal("javac is missing, and the docs' Java snippets are compiled with it: make test-deps installs it")
	}
	out := t.TempDir()
	build := exec.Command(filepath.Join(root, "clients", "java", "build.sh"), "build", out)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("clients/java/build.sh build: %v\n%s", err, b)
	}
	src := t.TempDir()
	where := map[string]string{} // file name: doc:line
	var files []string
	for _, d := range all {
		for _, b := range d.Blocks {
			if b.Lang != "java" {
				continue
			}
			class := fmt.Sprintf("Snippet%d", len(files)+1)
			file := filepath.Join(src, class+".java")
			if err := os.WriteFile(file, []byte(JavaUnit(b, class)), 0o600); err != nil {
				t.Fatal(err)
			}
			where[class+".java"] = fmt.Sprintf("%s:%d", d.Path, b.Line)
			files = append(files, file)
		}
	}
	if len(files) == 0 {
		t.Fatal("no java block in the docs: the check would pass on nothing")
	}
	javac := exec.Command("javac", append([]string{"--release", "17", "-encoding", "UTF-8", "-cp",
		filepath.Join(out, "ticketd-client.jar"), "-d", t.TempDir()}, files...)...)
	if b, err := javac.CombinedOutput(); err != nil {
		// Name each failing snippet by its place in the docs.
		msg := string(b)
		for file, at := range where {
			msg = strings.ReplaceAll(msg, filepath.Join(src, file), at+" (as "+file+")")
		}
		t.Fatalf("the docs' Java snippets do not compile as shown: %v\n%s", err, msg)
	}
	t.Logf("%d java blocks compiled", len(files))
}

// TestJavaMavenOffline runs the Java page's Maven build without Maven
// Central: Debian's packages of the plugins (the page's apt-get line, which
// make test-deps installs), Debian's surefire, offline, surefire running a
// test (one: make test-java runs them all). The jar lands in a repository
// of the test's own that reads everything else from Debian's.
func TestJavaMavenOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Maven and the Java client's tests: runs in make test, not under -short")
	}
	root, all := docs(t)
	page := byPath(all, javaDoc)
	if page == nil {
		t.Fatalf("no %s", javaDoc)
	}
	var packages []string
	var mvn string
	for _, b := range page.Blocks {
		text := strings.Join(b.Body, "\n")
		if b.Lang != "sh" || !strings.Contains(text, "-Dmaven.repo.local="+debianRepo) {
			continue
		}
		text = strings.ReplaceAll(text, "\\\n", " ")
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, "sudo apt-get install "); ok {
				packages = strings.Fields(rest)
			}
			if rest, ok := strings.CutPrefix(line, "cd clients/java && "); ok {
				mvn = rest
			}
		}
	}
	if len(packages) == 0 || !strings.HasPrefix(mvn, "mvn ") {
		t.Fatalf("%s: no sh block with the apt-get line and the mvn command of the build without Maven Central", javaDoc)
	}
	// The packages the page names are those make test-deps installs.
	list, err := exec.Command(filepath.Join(root, "scripts", "deps.sh"), "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range packages {
		if !regexp.MustCompile(`(?m)^\S+ ` + regexp.QuoteMeta(p) + ` `).Match(list) {
			t.Errorf("%s names package %s, which scripts/deps.sh does not install", javaDoc, p)
		}
	}
	for _, line := range strings.Split(string(list), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[0], debianRepo+"/") {
			if _, err := os.Stat(f[0]); err != nil {
				t.Fatalf("%s is missing (package %s), and the Java page's Maven build needs it: make test-deps installs it", f[0], f[1])
			}
		}
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		t.Fatal("mvn is missing, and the Java page's Maven build runs it: make test-deps installs it")
	}
	// A repository that reads Debian's (a link for each of its folders) and
	// takes the jar itself: the build writes nothing into Debian's.
	repo := t.TempDir()
	entries, err := os.ReadDir(debianRepo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(debianRepo, e.Name()), filepath.Join(repo, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	// The client's sources and pom, outside the checkout: Maven writes
	// target/ beside the pom.
	work := t.TempDir()
	for _, p := range []string{"pom.xml", "src"} {
		if b, err := exec.Command("cp", "-r", filepath.Join(root, "clients", "java", p), work).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", p, err, b)
		}
	}
	args := strings.Fields(strings.ReplaceAll(mvn, debianRepo, repo))
	args = append(args[:1], append([]string{"-Dticketd.tests=PomTest"}, args[1:]...)...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "MAVEN_OPTS=") // as a user runs it
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
	}
	pom, err := os.ReadFile(filepath.Join(work, "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<artifactId>ticketd-client</artifactId>\s*<version>([^<]+)</version>`).FindSubmatch(pom)
	if m == nil {
		t.Fatal("pom.xml: no version after the artifactId ticketd-client")
	}
	v := string(m[1])
	jar := filepath.Join(repo, "ticketd", "ticketd-client", v, "ticketd-client-"+v+".jar")
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("after %s: %v; want the jar installed", mvn, err)
	}
}
