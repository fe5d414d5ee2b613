package service

import (
	"slices"
	"testing"
)

// http declares what it needs on the host (Needs.HostTools, issue 24): its
// load generator (ab or wrk) when the clients run on the host, its web
// server (nginx or apache2) when the host is the instance (native).
func TestHTTPHostTools(t *testing.T) {
	for _, c := range []struct {
		raw    map[string]string
		native bool
		want   []string // bin/pkg
	}{
		{nil, false, []string{"ab/apache2-utils"}},
		{nil, true, []string{"ab/apache2-utils", "nginx/nginx"}},
		{map[string]string{"tool": "wrk"}, false, []string{"wrk/wrk"}},
		{map[string]string{"tool": "wrk", "server": "apache"}, true, []string{"wrk/wrk", "apache2/apache2"}},
		{map[string]string{"client": "instance"}, false, nil},
		{map[string]string{"client": "instance", "server": "apache"}, true, []string{"apache2/apache2"}},
	} {
		p, err := HTTP.Resolve(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tool := range HTTP.Needs.HostTools(p, c.native) {
			if len(tool.Alt) > 0 || tool.Module || tool.Install != "" {
				t.Errorf("%v native %v: %+v is more than an executable and its package", c.raw, c.native, tool)
			}
			got = append(got, tool.Bin+"/"+tool.Pkg)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v native %v: host tools %q, want %q", c.raw, c.native, got, c.want)
		}
	}
}
