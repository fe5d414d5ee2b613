package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Spark is the profile name of a small Debian tree (the host's release,
// built with mmdebstrap like the debian profile) holding a Java runtime
// and Python 3 (SparkPackages), the host's pyspark package (Spark's jars
// and its Python side) under SparkPySparkDir, and the agent: what the
// spark workload needs in instances. Instances need no network: pyspark
// is copied from the host's installation ('pip install pyspark'), not
// fetched. The tree without the agent is cached by content digest
// (release, apt sources and indexes, package versions, the pyspark and
// py4j versions) in the state directory.
const Spark = "spark"

// SparkPackages are what the spark profile installs from Debian: Spark 3.5
// runs on Java 17, pyspark on Python 3, and MLlib (K-means) needs NumPy.
var SparkPackages = []string{"openjdk-17-jre-headless", "python3", "python3-numpy", "procps"}

// SparkPySparkDir is where the spark profile puts the pyspark and py4j
// packages (the spark workload's ImagePySpark).
const SparkPySparkDir = "/opt/isobench/pyspark"

// sparkJava matches the Java runtime in the tree.
const sparkJava = "usr/lib/jvm/java-17-openjdk-*/bin/java"

// PySpark is the host's pyspark installation the spark profile copies.
type PySpark struct {
	Version     string // pyspark.__version__
	Py4JVersion string
	Dir         string // the pyspark package directory
	Py4JDir     string // the py4j package directory
}

// HostPySpark finds the pyspark and py4j packages of the python3 on PATH.
func HostPySpark(ctx context.Context) (PySpark, error) {
	out, err := exec.CommandContext(ctx, "python3", "-c",
		"import os, pyspark, py4j, py4j.version; print(pyspark.__version__); print(py4j.version.__version__); print(os.path.dirname(pyspark.__file__)); print(os.path.dirname(py4j.__file__))").Output()
	if err != nil {
		return PySpark{}, fmt.Errorf("spark image: the host's python3 has no pyspark (%w): install it with 'pip install pyspark==3.5.7'", err)
	}
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(f) != 4 {
		return PySpark{}, fmt.Errorf("spark image: unexpected answer from python3 about pyspark: %q", out)
	}
	ps := PySpark{Version: f[0], Py4JVersion: f[1], Dir: f[2], Py4JDir: f[3]}
	if _, err := os.Stat(filepath.Join(ps.Dir, "bin", "spark-submit")); err != nil {
		return PySpark{}, fmt.Errorf("spark image: pyspark %s in %s has no bin/spark-submit: %w", ps.Version, ps.Dir, err)
	}
	if _, err := os.Stat(filepath.Join(ps.Dir, "jars")); err != nil {
		return PySpark{}, fmt.Errorf("spark image: pyspark %s in %s carries no Spark jars: %w", ps.Version, ps.Dir, err)
	}
	return ps, nil
}

// SparkBaseDigest identifies the spark profile without the agent.
func SparkBaseDigest(ctx context.Context) (string, error) {
	return treeDigest(ctx, Spark, SparkPackages, func() (string, error) {
		ps, err := HostPySpark(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("pyspark=%s\npy4j=%s\n", ps.Version, ps.Py4JVersion), nil
	})
}

// SparkDigest identifies the spark profile's content: its base and the
// agent.
func (b Builder) SparkDigest(ctx context.Context) (string, error) {
	base, err := SparkBaseDigest(ctx)
	if err != nil {
		return "", err
	}
	return b.agentDigest(Spark, base)
}

// sparkTreeDone says whether dir holds a finished spark tree (pyspark's
// spark-submit, copied in last, is in place).
func sparkTreeDone(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(SparkPySparkDir, "/"), "pyspark", "bin", "spark-submit"))
	return err == nil
}

// SparkBase returns the cached spark tree (without the agent) under
// StateDir/spark, building it when no tree exists for the current digest:
// mmdebstrap with SparkPackages, then the host's pyspark and py4j copied
// to SparkPySparkDir.
func (b Builder) SparkBase(ctx context.Context) (string, error) {
	if b.StateDir == "" {
		return "", errors.New("spark image: no state directory to keep the Spark tree in")
	}
	digest, err := SparkBaseDigest(ctx)
	if err != nil {
		return "", err
	}
	return b.baseTree(ctx, "spark", "Spark", digest, sparkTreeDone, true, func(ctx context.Context, rel, srcFile, target string) error {
		ps, err := HostPySpark(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(b.log(), "image spark: building a %s tree with %s from %s (%s) and pyspark %s (this takes a few minutes)\n", rel, mmdebstrap, srcFile, strings.Join(SparkPackages, ", "), ps.Version)
		// Java's postinst registers its man page with update-alternatives,
		// which fails when the man directory (excluded) is missing.
		if err := b.mmdebstrapTree(ctx, "spark", rel, srcFile, target, SparkPackages, "--essential-hook=mkdir -p \"$1\"/usr/share/man/man1"); err != nil {
			return err
		}
		if m, _ := filepath.Glob(filepath.Join(target, sparkJava)); len(m) == 0 {
			return fmt.Errorf("spark image: the tree has no Java runtime (%s)", sparkJava)
		}
		py := filepath.Join(target, strings.TrimPrefix(SparkPySparkDir, "/"))
		if err := os.MkdirAll(py, 0o755); err != nil {
			return fmt.Errorf("spark image: %w", err)
		}
		for _, d := range []string{ps.Dir, ps.Py4JDir} {
			if o, err := exec.CommandContext(ctx, "cp", "-a", d, py+"/").CombinedOutput(); err != nil {
				return fmt.Errorf("spark image: copying %s: %w: %s", d, err, strings.TrimSpace(string(o)))
			}
		}
		// Compiled bytecode of the host's Python is of no use in the tree.
		exec.CommandContext(ctx, "find", py, "-name", "__pycache__", "-type", "d", "-prune", "-exec", "rm", "-rf", "{}", "+").Run()
		return nil
	})
}

// BuildSparkRootfs writes the spark profile into dir: the cached tree,
// hard-linked (platforms use it read-only), the directories isobench
// uses, and the agent.
func (b Builder) BuildSparkRootfs(ctx context.Context, dir string) error {
	if err := b.checkAgent(); err != nil {
		return err
	}
	start := time.Now()
	base, err := b.SparkBase(ctx)
	if err != nil {
		return err
	}
	if err := linkTree(ctx, "spark image: copying the Spark tree", base, dir, "root"); err != nil {
		return err
	}
	return b.addAgent("spark", dir, start)
}
