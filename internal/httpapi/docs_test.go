package httpapi

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docRoute is a route as docs/api.md and docs/fleet.md write it: a method,
// then a path whose parameters are {id}, ID, HOST and the like, maybe with a
// query in brackets or after a question mark.
var docRoute = regexp.MustCompile("`((?:GET|POST|DELETE|PUT|PATCH) /[^` ]*)")

// The API's reference names every route the daemon serves, and no route it
// does not: each route written in the docs is sent to the route table's own
// mux, and the patterns it reaches must be all the table's patterns.
func TestDocsNameEveryRoute(t *testing.T) {
	h := &handlers{svc: &fakeService{}}
	mux := http.NewServeMux()
	patterns := map[string]bool{}
	for _, r := range h.routes() {
		mux.HandleFunc(r.Pattern, func(http.ResponseWriter, *http.Request) {})
		patterns[r.Pattern] = false
	}
	param := regexp.MustCompile(`\{[^}/]*\}|\b[A-Z]{2,}\b|…`)
	for _, doc := range []string{"../../docs/api.md", "../../docs/fleet.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docRoute.FindAllStringSubmatch(string(b), -1) {
			method, path, _ := strings.Cut(m[1], " ")
			path, _, _ = strings.Cut(path, "[")
			path, _, _ = strings.Cut(path, "?")
			path = param.ReplaceAllString(path, "x")
			_, pattern := mux.Handler(httptest.NewRequest(method, path, nil))
			if pattern == "" {
				t.Errorf("%s names %s, which the daemon does not serve (%s %s)", doc, m[1], method, path)
				continue
			}
			patterns[pattern] = true
		}
	}
	var missing []string
	for p, named := range patterns {
		if !named {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("routes the docs do not name (add them to docs/api.md, or docs/fleet.md for /v1/fleet/): %q", missing)
	}
}
