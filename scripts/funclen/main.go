// Command funclen prints the longest functions and the non-test size of
// each package under the given directories, so a refactor can state its
// before and after with one command:
//
//	go run ./scripts/funclen -n 10 ./supervisor/...
//
// Sizes count every line of non-test .go files (comments included), like
// wc -l; a function's length is from its func keyword to its closing brace.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type funcLen struct {
	pos   string
	name  string
	lines int
}

func main() {
	n := flag.Int("n", 10, "how many of the longest functions to print")
	flag.Parse()
	roots := flag.Args()
	if len(roots) == 0 {
		roots = []string{"./..."}
	}
	var funcs []funcLen
	sizes := map[string]int{}
	for _, r := range roots {
		if err := walk(r, &funcs, sizes); err != nil {
			fmt.Fprintf(os.Stderr, "funclen: %v\n", err)
			os.Exit(1)
		}
	}
	printSizes(sizes)
	printLongest(funcs, *n)
}

// walk parses every non-test .go file under root (a trailing /... means
// the whole tree, as go's patterns do; otherwise only root itself).
func walk(root string, funcs *[]funcLen, sizes map[string]int) error {
	recursive := strings.HasSuffix(root, "/...")
	root = strings.TrimSuffix(root, "/...")
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (!recursive || skipDir(d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		return measure(p, funcs, sizes)
	})
}

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || name == "third_party" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// measure adds one file's line count to its package and its functions to funcs.
func measure(path string, funcs *[]funcLen, sizes map[string]int) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("could not parse %q: %w", path, err)
	}
	tf := fset.File(f.Pos())
	sizes[filepath.Dir(path)] += tf.LineCount()
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		*funcs = append(*funcs, funcLen{
			pos:   fmt.Sprintf("%s:%d", path, start.Line),
			name:  funcName(fd),
			lines: end.Line - start.Line + 1,
		})
	}
	return nil
}

// funcName is "Recv.Name" for methods, "Name" for functions.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func printSizes(sizes map[string]int) {
	dirs := make([]string, 0, len(sizes))
	for d := range sizes {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	fmt.Println("non-test lines per package:")
	for _, d := range dirs {
		fmt.Printf("%7d  %s\n", sizes[d], d)
	}
}

func printLongest(funcs []funcLen, n int) {
	sort.SliceStable(funcs, func(i, j int) bool { return funcs[i].lines > funcs[j].lines })
	if n > len(funcs) {
		n = len(funcs)
	}
	fmt.Printf("\n%d longest functions:\n", n)
	for _, f := range funcs[:n] {
		fmt.Printf("%5d  %-40s %s\n", f.lines, f.name, f.pos)
	}
}
