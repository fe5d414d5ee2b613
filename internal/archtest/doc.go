// Package archtest holds the tests of how isobench's packages depend on
// one another (archtest_test.go); it has no code of its own.
//
// The rule is that imports only go down: no package imports back up into
// a package tree (a directory under internal/ and everything below it)
// that imports it. The platform contract (internal/platform) and the
// packages every layer uses (hostos, guestenv, runrec...) import nothing
// above them.
package archtest
