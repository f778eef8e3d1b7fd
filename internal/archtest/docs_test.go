package archtest

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository stands alone: code and docs cite the project's own docs/
// (docs/README.md), never reference documents that live outside it, and
// every cited docs/ section exists.

// externalRefs are the names and paths of the reference documents kept
// outside the repository. Built from parts so this file does not match
// itself.
var externalRefs = []string{"remoting" + ".md", "storage-and" + "-broker", "grpc" + "-v5", "shared" + "/docs"}

// citesExternal reports whether text names one of externalRefs.
func citesExternal(text string) bool {
	for _, r := range externalRefs {
		if strings.Contains(text, r) {
			return true
		}
	}
	return false
}

// docRef matches a citation of a docs/ section: docs/protocol.md §7.3.
var docRef = regexp.MustCompile(`docs/([a-z]+)\.md §(\d+(?:\.\d+)*)`)

// heading matches a numbered Markdown heading: "## 7. Pulling", "### 7.3 Answer".
var heading = regexp.MustCompile(`^#+ (\d+(?:\.\d+)*)\.? `)

// listItem matches a numbered list item: "3. A send's ...".
var listItem = regexp.MustCompile(`^\s*(\d+)\. `)

// repoRoot is the module root (this package is internal/archtest).
const repoRoot = "../.."

// sourceFiles lists the repository's .go and .md files outside docs/ and
// .git.
func sourceFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() {
			switch rel {
			case ".git", "docs", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found only %d source files under %s", len(out), repoRoot)
	}
	return out
}

// docSections returns, for one docs/ file, every numbered heading and every
// numbered list item under a heading ("0.3" for item 3 of section 0).
func docSections(t *testing.T, name string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "docs", name+".md"))
	if err != nil {
		return nil
	}
	defer f.Close()
	secs := map[string]bool{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := heading.FindStringSubmatch(line); m != nil {
			cur = m[1]
			secs[cur] = true
			continue
		}
		if m := listItem.FindStringSubmatch(line); m != nil && cur != "" {
			secs[cur+"."+m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return secs
}

func TestNoExternalReferences(t *testing.T) {
	for _, path := range sourceFiles(t) {
		if filepath.Base(path) == "docs_test.go" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !citesExternal(string(data)) {
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if citesExternal(line) {
				t.Errorf("%s:%d cites a document outside the repository (cite docs/ instead): %s", path, i+1, strings.TrimSpace(line))
			}
		}
	}
}

func TestDocReferencesExist(t *testing.T) {
	sections := map[string]map[string]bool{}
	checked := 0
	for _, path := range sourceFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docRef.FindAllStringSubmatch(string(data), -1) {
			doc, sec := m[1], m[2]
			if _, ok := sections[doc]; !ok {
				sections[doc] = docSections(t, doc)
			}
			if sections[doc] == nil {
				t.Errorf("%s cites docs/%s.md, which does not exist", path, doc)
				continue
			}
			if !sections[doc][sec] {
				t.Errorf("%s cites docs/%s.md §%s, which has no such section", path, doc, sec)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d docs/ citations; the pattern no longer matches them", checked)
	}
}
