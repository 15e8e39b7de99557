/* Pre-checks of a plugin file before dlopen (no Python needed: the fuzz
 * target links this file alone). */
#ifndef PTK_ELFCHECK_H
#define PTK_ELFCHECK_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* How many bytes of the file the check wants to see: the ELF header and
 * the program headers of any real shared object fit in this. */
#define PTK__ELF_HEAD 65536

/* Checks that `head` (the first `headlen` bytes of a file of `file_size`
 * bytes) is an ELF shared object of this machine's class and byte order
 * whose program headers and every segment lie inside the file. dlopen maps
 * segments without looking at the file's size, and touching a page past
 * the end of a file raises SIGBUS: a truncated plugin would kill the
 * process. Returns 0, or -1 with the reason in why[whylen]. */
int ptk__elf_check(const unsigned char *head, size_t headlen,
                   uint64_t file_size, char *why, size_t whylen);

#pragma GCC visibility pop

#endif
