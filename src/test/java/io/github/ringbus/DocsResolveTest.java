package io.github.ringbus;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every link and every name the project's documentation gives resolves to something that exists: relative links in
 * README.md and docs/ to files of the repository; the {@code ClassName.member} names of ringbus's own classes that
 * the docs cite in backticks, and the {@code {@link Class#member}} references of the main sources' Javadoc, to a
 * member of that class (or of a class it extends). A renamed or moved method fails here instead of leaving a name a
 * reader cannot find.
 */
class DocsResolveTest {

    private static final Path ROOT = Paths.get("").toAbsolutePath();
    private static final Pattern MARKDOWN_LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern CITED_MEMBER = Pattern.compile("`([A-Z][A-Za-z0-9]*)\\.([a-z][A-Za-z0-9]*)(?:\\([^`]*\\))?`");
    private static final Pattern JAVADOC_LINK =
            Pattern.compile("\\{@link(?:plain)?\\s+([A-Za-z0-9_.]*)#([A-Za-z0-9_]+)[^}]*}");

    private static List<Path> markdownFiles() throws IOException {
        List<Path> files = new ArrayList<>();
        files.add(ROOT.resolve("README.md"));
        files.add(ROOT.resolve("CHANGELOG.md"));
        try (Stream<Path> docs = Files.walk(ROOT.resolve("docs"))) {
            docs.filter(path -> path.toString().endsWith(".md")).forEach(files::add);
        }
        try (Stream<Path> benchmarks = Files.list(ROOT.resolve("benchmarks"))) {
            benchmarks.filter(path -> path.toString().endsWith(".md")).forEach(files::add);
        }
        return files;
    }

    /** A duration in minutes: "about 12 minutes", "~18 min", "15 min". */
    private static final Pattern MINUTES = Pattern.compile("\\b\\d+ (?:minutes|min)\\b");

    /**
     * How long a profile of {@code benchmarks/run} takes is stated in one place, benchmarks/README.md's "Running", so
     * that the pages cannot give four figures for one job (they gave 12, 15, 17 and 18 minutes). docs/benchmarks.md
     * is exempt: it records dated runs, each with how long it took.
     */
    @Test
    void howLongTheBenchmarkProfilesTakeIsStatedOnlyInTheBenchmarksReadme() throws IOException {
        List<Path> files = new ArrayList<>(markdownFiles());
        Path script = ROOT.resolve("benchmarks/run");
        files.add(script);
        Path readme = ROOT.resolve("benchmarks/README.md");
        List<String> elsewhere = new ArrayList<>();
        for (Path file : files) {
            if (file.equals(readme) || file.getFileName().toString().equals("benchmarks.md")) {
                continue;
            }
            for (String line : Files.readAllLines(file)) {
                if ((file.equals(script) ? line.startsWith("#") : line.contains("benchmarks/run"))
                        && MINUTES.matcher(line).find()) {
                    elsewhere.add(ROOT.relativize(file) + ": " + line.trim());
                }
            }
        }

        assertThat(elsewhere).as("lines giving a profile's time outside benchmarks/README.md").isEmpty();
        assertThat(Files.readString(readme)).contains("this is the one place the project states it");
    }

    @Test
    void everyRelativeLinkInTheDocsLeadsToAFileOfTheRepository() throws IOException {
        Set<String> broken = new TreeSet<>();
        for (Path file : markdownFiles()) {
            Matcher link = MARKDOWN_LINK.matcher(Files.readString(file));
            while (link.find()) {
                String target = link.group(1);
                if (target.startsWith("http:") || target.startsWith("https:") || target.startsWith("mailto:")
                        || target.startsWith("#")) {
                    continue;
                }
                String path = target.contains("#") ? target.substring(0, target.indexOf('#')) : target;
                Path resolved = file.getParent().resolve(path).normalize();
                if (!resolved.startsWith(ROOT) || !Files.exists(resolved)) {
                    broken.add(ROOT.relativize(file) + " -> " + target);
                }
            }
        }
        assertThat(broken).as("links that lead nowhere (or out of the repository)").isEmpty();
    }

    @Test
    void everyMemberOfRingbusThatTheDocsCiteExists() throws IOException {
        Map<String, Class<?>> classes = ringbusClassesBySimpleName();
        Set<String> missing = new TreeSet<>();
        for (Path file : markdownFiles()) {
            Matcher cited = CITED_MEMBER.matcher(Files.readString(file));
            while (cited.find()) {
                Class<?> type = classes.get(cited.group(1));
                if (type != null && !cited.group(2).equals("java") && !hasMember(type, cited.group(2))) {
                    missing.add(ROOT.relativize(file) + ": " + cited.group(1) + "." + cited.group(2));
                }
            }
        }
        assertThat(missing).as("names of ringbus members the docs cite that do not exist").isEmpty();
    }

    @Test
    void everyJavadocLinkToAMemberOfRingbusResolves() throws IOException {
        Map<String, Class<?>> classes = ringbusClassesBySimpleName();
        Set<String> missing = new TreeSet<>();
        for (Path source : mainSources()) {
            String text = Files.readString(source);
            String own = source.getFileName().toString().replace(".java", "");
            Matcher link = JAVADOC_LINK.matcher(text);
            while (link.find()) {
                String typeName = link.group(1).isEmpty() ? own : link.group(1);
                String simple = typeName.substring(typeName.lastIndexOf('.') + 1);
                Class<?> ownType = classes.get(own);
                // A link without a class, or to a class nested in this file, is this file's: its own classes first.
                Class<?> type = link.group(1).isEmpty() ? ownType : nested(ownType, simple);
                if (type == null) {
                    type = classes.get(simple);
                }
                if (type == null) {
                    continue; // a class of Axon, the JDK or the Disruptor: their names are theirs to keep
                }
                if (link.group(1).isEmpty() && !hasMember(type, link.group(2))
                        && Arrays.stream(type.getDeclaredClasses()).anyMatch(n -> hasMember(n, link.group(2)))) {
                    continue; // written inside a nested class, of its own member
                }
                if (type != null && !hasMember(type, link.group(2))) {
                    missing.add(ROOT.relativize(source) + ": " + typeName + "#" + link.group(2));
                }
            }
        }
        assertThat(missing).as("Javadoc links to ringbus members that do not exist").isEmpty();
    }

    private static final Pattern TESTS_LINE = Pattern.compile("Tests?:((?:\\s*\\*?\\s*\\{@code [\\w.]+}[,.]?)+)");
    private static final Pattern CODE_NAME = Pattern.compile("\\{@code ([\\w.]+)}");

    /** The test classes a main class's Javadoc names on its "Tests:" line, by source file. */
    private static Map<Path, List<String>> namedTests() throws IOException {
        Map<Path, List<String>> named = new HashMap<>();
        for (Path source : mainSources()) {
            Matcher line = TESTS_LINE.matcher(Files.readString(source));
            while (line.find()) {
                Matcher name = CODE_NAME.matcher(line.group(1));
                while (name.find()) {
                    named.computeIfAbsent(source, s -> new ArrayList<>()).add(name.group(1));
                }
            }
        }
        return named;
    }

    private static boolean testClassExists(String name) {
        try {
            Class.forName("io.github.ringbus." + name, false, DocsResolveTest.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    @Test
    void everyTestAClassSaysCoversItExists() throws IOException {
        Set<String> missing = new TreeSet<>();
        namedTests().forEach((source, names) -> names.stream().filter(name -> !testClassExists(name))
                                                     .forEach(name -> missing.add(ROOT.relativize(source) + ": " + name)));
        assertThat(missing).as("tests named on a main class's \"Tests:\" line that do not exist").isEmpty();
    }

    /**
     * A newcomer goes from a class to its test: each core class with behaviour of its own has a test named after it, or
     * a "Tests:" line in its Javadoc naming the tests that cover it (held true by the test above).
     */
    @Test
    void everyCoreClassWithBehaviourHasItsTestOrNamesTheTestsThatCoverIt() throws IOException {
        Set<Path> naming = namedTests().keySet();
        Set<String> testNames;
        try (Stream<Path> tests = Files.walk(ROOT.resolve("src/test/java"))) {
            testNames = tests.map(path -> path.getFileName().toString()).collect(Collectors.toSet());
        }
        Set<String> unfindable = new TreeSet<>();
        for (Path source : mainSources()) {
            if (!source.getParent().equals(ROOT.resolve("src/main/java/io/github/ringbus"))
                    || source.getFileName().toString().equals("package-info.java")) {
                continue;
            }
            String name = source.getFileName().toString().replace(".java", "");
            Class<?> type;
            try {
                type = Class.forName("io.github.ringbus." + name, false, DocsResolveTest.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                continue;
            }
            if (type.isInterface() || type.isEnum() || type.isRecord() || Throwable.class.isAssignableFrom(type)) {
                continue; // a vocabulary: no behaviour of its own to test
            }
            boolean findable = naming.contains(source)
                    || testNames.stream().anyMatch(test -> test.startsWith(name) && test.endsWith("Test.java"));
            if (!findable) {
                unfindable.add(name);
            }
        }
        assertThat(unfindable).as("core classes with neither a test named after them nor a \"Tests:\" line").isEmpty();
    }

    private static Class<?> nested(Class<?> outer, String simpleName) {
        if (outer == null) {
            return null;
        }
        return Arrays.stream(outer.getDeclaredClasses()).filter(c -> c.getSimpleName().equals(simpleName))
                     .findFirst().orElse(null);
    }

    private static List<Path> mainSources() throws IOException {
        try (Stream<Path> sources = Files.walk(ROOT.resolve("src/main/java"))) {
            return sources.filter(path -> path.toString().endsWith(".java")).collect(Collectors.toList());
        }
    }

    /** Every class of ringbus's main sources, nested ones included, by simple name (first one wins). */
    private static Map<String, Class<?>> ringbusClassesBySimpleName() throws IOException {
        Map<String, Class<?>> classes = new HashMap<>();
        Path base = ROOT.resolve("src/main/java");
        for (Path source : mainSources()) {
            if (source.getFileName().toString().equals("package-info.java")) {
                continue;
            }
            String name = base.relativize(source).toString().replace(".java", "").replace('/', '.');
            try {
                Class<?> type = Class.forName(name, false, DocsResolveTest.class.getClassLoader());
                classes.putIfAbsent(type.getSimpleName(), type);
                for (Class<?> nested : type.getDeclaredClasses()) {
                    classes.putIfAbsent(nested.getSimpleName(), nested);
                }
            } catch (ClassNotFoundException | LinkageError e) {
                // a class that needs what the test class path lacks: its names are not checked
            }
        }
        return classes;
    }

    private static boolean hasMember(Class<?> type, String name) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (declares(c, name)) {
                return true;
            }
            for (Class<?> implemented : c.getInterfaces()) {
                if (declaresInHierarchy(implemented, name)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static boolean declaresInHierarchy(Class<?> type, String name) {
        if (declares(type, name)) {
            return true;
        }
        for (Class<?> parent : type.getInterfaces()) {
            if (declaresInHierarchy(parent, name)) {
                return true;
            }
        }
        return false;
    }

    private static boolean declares(Class<?> type, String name) {
        for (Method method : type.getDeclaredMethods()) {
            if (method.getName().equals(name)) {
                return true;
            }
        }
        for (Field field : type.getDeclaredFields()) {
            if (field.getName().equals(name)) {
                return true;
            }
        }
        for (Class<?> nested : type.getDeclaredClasses()) {
            if (nested.getSimpleName().equals(name)) {
                return true;
            }
        }
        if (type.isRecord()) {
            return Arrays.stream(type.getRecordComponents()).anyMatch(c -> c.getName().equals(name));
        }
        return false;
    }
}
