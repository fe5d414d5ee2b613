package nspawn

import (
	"testing"

	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

// TestConformance runs the shared platform suite against systemd-nspawn.
func TestConformance(t *testing.T) {
	localtest.Conformance(t, Factory, conformance.Opts{})
}

// TestStartup times create → agent hello → exit, for the report.
func TestStartup(t *testing.T) { localtest.Startup(t, Factory, conformance.BuildAgent(t)) }

func TestNewRejects(t *testing.T) { localtest.NewRejects(t, Factory) }
