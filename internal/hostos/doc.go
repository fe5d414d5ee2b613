// Package hostos reads and handles the operating system isobench runs on
// (the host, or a VM's guest for its init), for the platforms, the cleanup
// and the guest: a process's parent, command and argv in /proc, the
// cgroups it is in and what they charge (memory, CPU, OOM kills), the disk
// space a tree occupies, paths in the mount tables, a unix socket's peer,
// process groups for the commands started for an instance, and replacing a
// file without following links. It imports nothing of isobench's, so any
// package can use it.
package hostos
