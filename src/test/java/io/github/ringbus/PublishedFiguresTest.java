package io.github.ringbus;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One source for each published figure: docs/benchmarks.md's "Published figures" lists every ratio and time the other
 * pages quote, each with the section of the record it was measured in and the text it is recorded as there. A page
 * that quotes a figure the list does not hold fails here, and so does a row whose record is not where it says.
 */
class PublishedFiguresTest {

    /** A ratio ({@code 22.5x}, {@code 16.6×}) or a time in microseconds ({@code 11.4 µs}), not inside a range's end. */
    private static final Pattern FIGURE = Pattern.compile("(?<![\\w.\\-–])(\\d+(?:\\.\\d+)?)\\s?(x|×|µs)(?!\\w)");
    private static final List<String> PAGES = List.of("README.md", "docs/performance.md", "docs/postgres.md",
                                                      "docs/distributed.md");

    private static Set<String> figuresIn(String text) {
        Set<String> figures = new TreeSet<>();
        Matcher figure = FIGURE.matcher(text);
        while (figure.find()) {
            figures.add(figure.group(1) + (figure.group(2).equals("µs") ? " µs" : "x"));
        }
        return figures;
    }

    private static String benchmarks() throws IOException {
        return Files.readString(Path.of("docs/benchmarks.md"));
    }

    /** The rows of the list: figure column, section anchor, recorded-as text. */
    private static List<String[]> rows(String benchmarks) {
        int start = benchmarks.indexOf("## Published figures");
        assertThat(start).as("docs/benchmarks.md has a \"Published figures\" section").isNotNegative();
        String section = benchmarks.substring(start, benchmarks.indexOf("\n## ", start + 1));
        List<String[]> rows = new ArrayList<>();
        for (String line : section.split("\n")) {
            if (!line.startsWith("| ") || line.startsWith("| figure") ) {
                continue;
            }
            String[] cells = line.substring(2, line.length() - 2).split(" (?<!\\\\)\\| ", -1);
            assertThat(cells).as("a row of four cells: %s", line).hasSize(4);
            Matcher anchor = Pattern.compile("\\]\\(#([^)]+)\\)").matcher(cells[2]);
            assertThat(anchor.find()).as("the row names its section: %s", line).isTrue();
            rows.add(new String[]{cells[0], anchor.group(1), cells[3].replace("\\|", "|").strip()});
        }
        assertThat(rows).isNotEmpty();
        return rows;
    }

    /** The record's sections by GitHub's anchor of their heading. */
    private static Map<String, String> sections(String benchmarks) {
        Map<String, String> sections = new LinkedHashMap<>();
        Matcher heading = Pattern.compile("(?m)^#{2,3} (.+)$").matcher(benchmarks);
        List<int[]> bounds = new ArrayList<>();
        List<String> anchors = new ArrayList<>();
        while (heading.find()) {
            bounds.add(new int[]{heading.start()});
            anchors.add(heading.group(1).toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9 _-]", "").replace(' ', '-'));
        }
        for (int i = 0; i < anchors.size(); i++) {
            int end = i + 1 < bounds.size() ? bounds.get(i + 1)[0] : benchmarks.length();
            sections.put(anchors.get(i), benchmarks.substring(bounds.get(i)[0], end));
        }
        return sections;
    }

    private static String flat(String text) {
        return text.replaceAll("\\s+", " ");
    }

    @Test
    void everyFigureAPageQuotesIsInThePublishedList() throws IOException {
        Set<String> held = new TreeSet<>();
        for (String[] row : rows(benchmarks())) {
            held.addAll(figuresIn(row[0]));
        }
        for (String page : PAGES) {
            assertThat(figuresIn(Files.readString(Path.of(page))))
                    .as("figures %s quotes that docs/benchmarks.md's \"Published figures\" does not hold", page)
                    .isSubsetOf(held);
        }
    }

    @Test
    void everyPublishedFigureIsRecordedInTheSectionItNames() throws IOException {
        String benchmarks = benchmarks();
        Map<String, String> sections = sections(benchmarks);
        for (String[] row : rows(benchmarks)) {
            assertThat(sections).as("a section with anchor #%s", row[1]).containsKey(row[1]);
            assertThat(flat(sections.get(row[1]))).as("figure %s recorded in #%s", row[0], row[1])
                                                 .contains(flat(row[2]));
        }
    }

    /**
     * The cases the README's table states, each with the rows of docs/performance.md's table for the same case. A
     * README row not listed here fails the test below, so that a new case gets its counterpart.
     */
    private static final Map<String, List<String>> SAME_CASE = Map.of(
            "PostgreSQL (`fsync=on`), 1 / 8 / 64 dispatching threads",
            List.of("durable PostgreSQL (`fsync=on`), 1 dispatching thread", "durable PostgreSQL, 8 dispatching threads",
                    "durable PostgreSQL, 64 dispatching threads"),
            "in memory, 1 and 4 dispatching threads", List.of("in memory, 1 / 4 dispatching threads"),
            "`sendAndWait` from one thread, median / p99", List.of("`sendAndWait` from one thread, median / p99"));

    /** The figure cells of a page's table by case: the second cell of each row, up to its first parenthesis. */
    private static Map<String, String> figureCells(String page, String header) throws IOException {
        String text = Files.readString(Path.of(page));
        int start = text.indexOf(header);
        assertThat(start).as("%s has its table headed %s", page, header).isNotNegative();
        Map<String, String> cells = new LinkedHashMap<>();
        for (String line : text.substring(start).split("\n")) {
            if (!line.startsWith("|")) {
                break;
            }
            String[] cell = line.split(" \\| ");
            if (cell.length < 2 || line.startsWith("|---") || line.startsWith(header)) {
                continue;
            }
            String figures = cell[1].replace("|", "").strip();
            cells.put(cell[0].substring(2).strip(), figures.contains("(") ? figures.substring(0, figures.indexOf('('))
                                                                            .strip() : figures);
        }
        return cells;
    }

    private static List<String> numbers(String cell) {
        List<String> numbers = new ArrayList<>();
        Matcher number = Pattern.compile("\\d+(?:\\.\\d+)?").matcher(cell);
        while (number.find()) {
            numbers.add(number.group());
        }
        return numbers;
    }

    @Test
    void theReadmeAndThePerformancePageGiveTheSameFiguresForEachCase() throws IOException {
        Map<String, String> readme = figureCells("README.md", "| case (2 cores) |");
        Map<String, String> performance = figureCells("docs/performance.md", "| case (2 vCPUs");
        assertThat(readme.keySet()).as("the README's cases, each with its rows on docs/performance.md")
                                   .isSubsetOf(SAME_CASE.keySet()).isNotEmpty();
        readme.forEach((readmeCase, readmeFigures) -> {
            List<String> onPerformance = new ArrayList<>();
            for (String row : SAME_CASE.get(readmeCase)) {
                assertThat(performance).as("docs/performance.md states the case [%s]", row).containsKey(row);
                onPerformance.addAll(numbers(performance.get(row)));
            }
            assertThat(onPerformance).as("docs/performance.md's figures for the README's case [%s]", readmeCase)
                                     .isEqualTo(numbers(readmeFigures));
        });
    }
}
