/* Which backends there are, and which one the hub runs: the one file of
 * lib/ that names them. The hub (lib/core) calls the chosen one through
 * ptk__hub_ops only; adding a backend is adding its table here (and a
 * ptk_backend value for users to name it). */
#include "session/session.h"
#include "backends/backends.h"
#include "ref/ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every backend, in order of preference. */
const ptk__backend_ops *const ptk__backends[] = {
    &ptk__monitoring_ops,
    &ptk__legacy_ops,
};
const size_t ptk__nbackends = sizeof ptk__backends / sizeof ptk__backends[0];

const ptk__backend_ops *
ptk__backend_ops_of(ptk_backend id)
{
    for (size_t i = 0; i < ptk__nbackends; i++) {
        if (ptk__backends[i]->id == id) {
            return ptk__backends[i];
        }
    }
    return NULL;
}

/* "legacy, monitoring or auto": the names users may give, by id. */
static const char *
names_expected(char *buf, size_t cap)
{
    size_t len = 0;
    int prev = PTK_BACKEND_AUTO;
    buf[0] = '\0';
    for (size_t n = 0; n < ptk__nbackends; n++) {
        const ptk__backend_ops *next = NULL;
        for (size_t i = 0; i < ptk__nbackends; i++) {
            const ptk__backend_ops *o = ptk__backends[i];
            if ((int)o->id > prev && (next == NULL || o->id < next->id)) {
                next = o;
            }
        }
        if (next == NULL) {
            break;
        }
        int w = snprintf(buf + len, cap - len, "%s%s", n ? ", " : "", next->name);
        len += w > 0 && (size_t)w < cap - len ? (size_t)w : 0;
        prev = (int)next->id;
    }
    snprintf(buf + len, cap - len, " or auto");
    return buf;
}

int
ptk__backend_resolve(ptk_backend requested, ptk_backend *out, int *explicit,
                     char **errmsg)
{
    *explicit = requested != PTK_BACKEND_AUTO;
    if (requested == PTK_BACKEND_AUTO) {
        const char *env = getenv("PYTRACEKIT_BACKEND");
        if (env != NULL && *env != '\0') {
            if (ptk_backend_parse(env, &requested) < 0) {
                char names[256];
                return ptk__err(errmsg, PTK_EINVAL,
                                "PYTRACEKIT_BACKEND is '%s'; expected %s",
                                env, names_expected(names, sizeof names));
            }
            *explicit = requested != PTK_BACKEND_AUTO;
        }
    }
    if (requested == PTK_BACKEND_AUTO) {
        /* the most preferred backend this interpreter has */
        for (size_t i = 0; i < ptk__nbackends; i++) {
            if (ptk__backends[i]->available(NULL) == PTK_OK) {
                *out = ptk__backends[i]->id;
                return PTK_OK;
            }
        }
        return ptk__err(errmsg, PTK_EUNSUPPORTED, "no backend is available");
    }
    const ptk__backend_ops *ops = ptk__backend_ops_of(requested);
    if (ops == NULL) {
        return ptk__err(errmsg, PTK_EINVAL, "invalid backend %d", (int)requested);
    }
    int rc = ops->available(errmsg); /* says what is missing */
    if (rc < 0) {
        return rc;
    }
    *out = requested;
    return PTK_OK;
}

int
ptk__backend_choose(ptk_backend requested, int explicit, FILE *warn,
                    ptk_backend *out, char **errmsg)
{
    ptk__ref_sync_hook = ptk__ref_sync; /* the hub's other source of events */
    if (ptk__any_running() && ptk__hub_backend != PTK_BACKEND_AUTO) {
        /* One hub, one backend: a session joins the running one. */
        if (explicit && requested != ptk__hub_backend) {
            return ptk__err(errmsg, PTK_EBUSY,
                            "the %s backend was asked for, but another session "
                            "is running on the %s backend",
                            ptk_backend_name(requested),
                            ptk_backend_name(ptk__hub_backend));
        }
        *out = ptk__hub_backend;
        return PTK_OK;
    }
    const ptk__backend_ops *ops = ptk__backend_ops_of(requested);
    char *why = NULL;
    int rc = ops ? ops->claim(&why) : PTK_EINVAL;
    if (rc < 0) {
        /* the next one down the list of preference that can be claimed */
        size_t i = 0;
        while (i < ptk__nbackends && ptk__backends[i] != ops) {
            i++;
        }
        for (i++; i < ptk__nbackends; i++) {
            if (ptk__backends[i]->available(NULL) == PTK_OK &&
                ptk__backends[i]->claim(NULL) == PTK_OK) {
                fprintf(warn ? warn : stderr,
                        "pytracekit: %s; using the %s backend\n",
                        why ? why : "the backend is not usable",
                        ptk__backends[i]->name);
                free(why);
                ptk__hub_ops = ptk__backends[i];
                ptk__hub_backend = *out = ptk__backends[i]->id;
                ptk__threads_hot_init();
                return PTK_OK;
            }
        }
        rc = ptk__err(errmsg, rc, "%s", why ? why : "no backend can be used");
        free(why);
        return rc;
    }
    free(why);
    ptk__hub_ops = ops;
    ptk__hub_backend = requested;
    ptk__threads_hot_init();
    *out = requested;
    return PTK_OK;
}

void
ptk__backends_before_stop(struct ptk_session *s)
{
    if (ptk__hub_ops != NULL && ptk__hub_ops->before_stop != NULL) {
        ptk__hub_ops->before_stop(s);
    }
}

void
ptk__backends_reset(void)
{
    for (size_t i = 0; i < ptk__nbackends; i++) {
        ptk__backends[i]->reset();
    }
}

const char *
ptk_backend_name(ptk_backend b)
{
    if (b == PTK_BACKEND_AUTO) {
        return "auto";
    }
    const ptk__backend_ops *ops = ptk__backend_ops_of(b);
    return ops ? ops->name : NULL;
}

int
ptk_backend_parse(const char *name, ptk_backend *out)
{
    if (name != NULL && strcmp(name, "auto") == 0) {
        *out = PTK_BACKEND_AUTO;
        return PTK_OK;
    }
    for (size_t i = 0; name != NULL && i < ptk__nbackends; i++) {
        if (strcmp(name, ptk__backends[i]->name) == 0) {
            *out = ptk__backends[i]->id;
            return PTK_OK;
        }
    }
    return PTK_EINVAL;
}
