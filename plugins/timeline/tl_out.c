/*
 * timeline: the output file, written while the program runs through two
 * buffers of a fixed size and one writer thread.
 *
 * The traced threads (holding the GIL, so one at a time) append to the
 * current buffer. When it is full — or when flush_ms has passed since the
 * last hand-over — it goes to the writer thread, and the other buffer
 * becomes current. If the writer still has the other buffer (the disk is
 * slower than the program), nothing is handed over and tl__out_reserve
 * returns NULL: the caller drops the event and counts it. Memory is two
 * buffers whatever the run's length; the program is never blocked on the
 * disk before tl__out_close.
 *
 * Every buffer holds whole records (a JSON event, a protobuf TracePacket),
 * so the file on disk is always a readable prefix of the finished trace.
 */
#include "timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *
tl_writer(void *arg)
{
    tl_out *o = arg;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (!atomic_load_explicit(&o->busy, memory_order_acquire) && !o->stop) {
            pthread_cond_wait(&o->cv, &o->mu);
        }
        if (!atomic_load_explicit(&o->busy, memory_order_acquire) && o->stop) {
            break;
        }
        const char *p = o->buf[1 - o->cur];
        size_t n = o->pending_len;
        pthread_mutex_unlock(&o->mu);
        while (n > 0 && o->werrno == 0) {
            ssize_t w = write(o->fd, p, n);
            if (w < 0) {
                if (errno == EINTR) {
                    continue;
                }
                o->werrno = errno;
                break;
            }
            p += w;
            n -= (size_t)w;
            o->written += (uint64_t)w;
        }
        pthread_mutex_lock(&o->mu);
        atomic_store_explicit(&o->busy, 0, memory_order_release);
        pthread_cond_broadcast(&o->cv);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

int
tl__out_open(tl_out *o, const char *path, int fd, size_t cap, char *err,
             size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->fd = fd;
    int made = 0;
    o->cap = cap;
    o->buf[0] = malloc(cap);
    o->buf[1] = malloc(cap);
    if (o->buf[0] == NULL || o->buf[1] == NULL) {
        snprintf(err, errlen, "out of memory for two %zu-byte buffers", cap);
        goto fail;
    }
    if (o->fd < 0) {
        /* an older host: at least no planted symlink is followed */
        o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                     0644);
        made = o->fd >= 0;
    }
    if (o->fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        goto fail;
    }
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    atomic_init(&o->busy, 0);
    if (pthread_create(&o->thread, NULL, tl_writer, o) != 0) {
        snprintf(err, errlen, "cannot start the writer thread");
        pthread_mutex_destroy(&o->mu);
        pthread_cond_destroy(&o->cv);
        goto fail;
    }
    o->started = 1;
    o->owner = getpid();
    return 0;
fail:
    if (o->fd >= 0) {
        close(o->fd);
        if (made) {
            unlink(path);
        }
    }
    free(o->buf[0]);
    free(o->buf[1]);
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    return -1;
}

/* Hands the current buffer to the idle writer; the other one becomes current. */
static void
tl_handoff(tl_out *o, uint64_t now)
{
    if (getpid() != o->owner) {
        /* A forked child: no writer thread here, and the mutex may have been
         * held by the parent's at the fork (locking it could hang forever).
         * The file is the parent's: what the child buffered is dropped. */
        o->len = 0;
        return;
    }
    pthread_mutex_lock(&o->mu);
    o->pending_len = o->len;
    o->cur = 1 - o->cur;
    o->len = 0;
    o->handoffs++;
    o->last_handoff_ns = now;
    atomic_store_explicit(&o->busy, 1, memory_order_release);
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

char *
tl__out_reserve_slow(tl_out *o, size_t n, uint64_t now)
{
    if (o->len + n <= o->cap) {
        return o->buf[o->cur] + o->len;
    }
    if (o->sync) {
        return n <= o->cap && tl__out_sync_flush(o) == 0 ? o->buf[o->cur] : NULL;
    }
    if (n > o->cap || atomic_load_explicit(&o->busy, memory_order_acquire)) {
        return NULL;
    }
    tl_handoff(o, now);
    return o->buf[o->cur];
}

int
tl__out_sync_flush(tl_out *o)
{
    const char *p = o->buf[o->cur];
    size_t n = o->len;
    while (n > 0 && o->werrno == 0) {
        ssize_t w = write(o->fd, p, n);
        if (w < 0) {
            if (errno != EINTR) {
                o->werrno = errno;
            }
            continue;
        }
        p += w;
        n -= (size_t)w;
        o->written += (uint64_t)w;
    }
    o->len = 0;
    return o->werrno;
}

void
tl__out_kick(tl_out *o, uint64_t now)
{
    if (o->len > 0 && !atomic_load_explicit(&o->busy, memory_order_acquire)) {
        tl_handoff(o, now);
    }
}

int
tl__out_close(tl_out *o)
{
    if (!o->started) {
        return 0;
    }
    if (getpid() != o->owner) {
        /* A forked child: the writer thread is not here, and the file is the
         * parent's. Write nothing, wait for nothing. */
        close(o->fd);
        o->fd = -1;
        free(o->buf[0]);
        free(o->buf[1]);
        o->buf[0] = o->buf[1] = NULL;
        o->started = 0;
        return 0;
    }
    /* Wait for the writer, hand over what is left, wait again. */
    pthread_mutex_lock(&o->mu);
    while (atomic_load_explicit(&o->busy, memory_order_acquire)) {
        pthread_cond_wait(&o->cv, &o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    if (o->len > 0) {
        tl_handoff(o, o->last_handoff_ns);
    }
    pthread_mutex_lock(&o->mu);
    o->stop = 1;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
    pthread_join(o->thread, NULL);
    int rc = o->werrno;
    if (close(o->fd) != 0 && rc == 0) {
        rc = errno;
    }
    o->fd = -1;
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    free(o->buf[0]);
    free(o->buf[1]);
    o->buf[0] = o->buf[1] = NULL;
    o->started = 0;
    return rc;
}
