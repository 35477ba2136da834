package gpipe_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoInternalTypesExported checks the module's public surface: no
// exported function, method, struct field or variable of a package a
// program outside the module can import names a type of an internal
// package, which that program could not name. (A type alias is how an
// internal type gets a public name, as gpipe.Error does.)
func TestNoInternalTypesExported(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "internal" || d.Name() == "testdata" ||
				path == "cmd" || path == "examples" || path == "scripts") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			checkExported(t, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkExported reports each exported declaration of the file at path
// whose type names an internal package's type.
func checkExported(t *testing.T, path string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	internal := internalImports(f)
	report := func(what string, n ast.Node) {
		ast.Inspect(n, func(x ast.Node) bool {
			if se, ok := x.(*ast.SelectorExpr); ok {
				if id, ok := se.X.(*ast.Ident); ok && internal[id.Name] {
					t.Errorf("%s: exported %s names the internal type %s.%s", fset.Position(se.Pos()), what, id.Name, se.Sel.Name)
				}
			}
			return true
		})
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && exportedReceiver(d) {
				report("func "+d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				checkSpec(spec, report)
			}
		}
	}
}

// checkSpec reports the exported parts of a type or variable declaration.
func checkSpec(spec ast.Spec, report func(string, ast.Node)) {
	switch s := spec.(type) {
	case *ast.TypeSpec:
		if !s.Name.IsExported() || s.Assign.IsValid() {
			return
		}
		st, ok := s.Type.(*ast.StructType)
		if !ok {
			report("type "+s.Name.Name, s.Type)
			return
		}
		for _, field := range st.Fields.List {
			exported := len(field.Names) == 0 // embedded
			for _, n := range field.Names {
				exported = exported || n.IsExported()
			}
			if exported {
				report("field of "+s.Name.Name, field.Type)
			}
		}
	case *ast.ValueSpec:
		for _, n := range s.Names {
			if n.IsExported() && s.Type != nil {
				report("var "+n.Name, s.Type)
			}
		}
	}
}

// internalImports are the names f imports internal packages under.
func internalImports(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(p+"/", "/internal/") {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = true
	}
	return names
}

// exportedReceiver says a method's receiver type is exported (a function
// has none).
func exportedReceiver(d *ast.FuncDecl) bool {
	if d.Recv == nil {
		return true
	}
	typ := d.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	id, ok := typ.(*ast.Ident)
	return !ok || id.IsExported()
}
