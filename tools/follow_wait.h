/*
 * Waiting for the reports of followed children (OUTDIR/pid-N/run.json):
 * compiled into the pytracekit command and the Python extension, so that
 * both wait and report the same way. Not part of the library's API.
 */
#ifndef PTK_FOLLOW_WAIT_H
#define PTK_FOLLOW_WAIT_H

#include <stddef.h>

/** The pid-N directories of a report directory. */
typedef struct {
    char **names; /**< "pid-N" or "pid-N.K", owned */
    size_t n;     /**< how many */
} child_dirs;

/** Reads the pid-N directories of @p outdir into @p c (empty if none). */
void ptk_child_dirs_read(const char *outdir, child_dirs *c);

/** Frees what ptk_child_dirs_read() read. */
void ptk_child_dirs_free(child_dirs *c);

/** Closes every file descriptor from 3 up (the program is over), so that a
 *  child waiting for the end of a pipe from this process can end. */
void ptk_close_inherited(void);

/**
 * Waits, up to PYTRACEKIT_CHILD_WAIT seconds (default 10), for the followed
 * children whose pid-N directories appeared in @p outdir since @p before
 * and which have no run.json yet, then says on stderr which have none.
 *
 * @param outdir       the report directory
 * @param before       its pid-N directories before the program started
 * @param writing_only 0: wait for every child of this process that runs
 *                     followed, until it wrote run.json or ended (the
 *                     command, once the program is over); 1: only for
 *                     children writing their report now, and say which
 *                     still run (Session.stop(), while the program goes on)
 */
void ptk_wait_for_children(const char *outdir, const child_dirs *before,
                           int writing_only);

#endif
