/* The plugin loader: find a plugin by path or name, dlopen it strictly,
 * check its descriptor. Rejections say what was expected and what was found. */
#include "session/session.h"
#include "ref/ref.h"
#include "session/elfcheck.h"

#include <dirent.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory libpytracekit was loaded from (relocatable lookups). */
char *
ptk__library_dir(void)
{
    Dl_info info;
    if (dladdr((void *)&ptk__library_dir, &info) == 0 ||
        info.dli_fname == NULL) {
        return NULL;
    }
    char *path = realpath(info.dli_fname, NULL);
    if (path == NULL) {
        path = ptk__strdup(info.dli_fname);
    }
    if (path == NULL) {
        return NULL;
    }
    char *slash = strrchr(path, '/');
    if (slash != NULL) {
        *slash = '\0';
    }
    return path;
}

#ifndef PTK_REL_LIBDIR
#define PTK_REL_LIBDIR "lib"
#endif
#ifndef PTK_REL_BINDIR
#define PTK_REL_BINDIR "bin"
#endif
#ifndef PTK_REL_PYTHONDIR
#define PTK_REL_PYTHONDIR "lib/python3/site-packages/pytracekit"
#endif
#ifndef PTK_REL_PLUGINDIR
#define PTK_REL_PLUGINDIR "lib/pytracekit/plugins"
#endif

/* Where the code that searches can sit inside its tree: installed (the
 * library, or with a static library the command and the Python extension)
 * and in the build tree (lib/, tools/, python/pytracekit/). */
static const char *const code_dirs[] = {
    PTK_REL_LIBDIR, PTK_REL_BINDIR, PTK_REL_PYTHONDIR,
    "lib", "tools", "python/pytracekit",
};

/* The built-in plugin directories for code in `dir`: the tree's root is
 * `dir` without the tail it has in code_dirs; its plugins are in
 * <root>/<plugin dir> when installed and <root>/plugins in the build tree.
 * Nothing outside that root is searched (a fallback that climbs out of it
 * would search, say, /opt/pytracekit/plugins for the prefix /opt/a/b). A
 * directory that is in no known place has only <dir>/pytracekit/plugins. */
static char *
builtin_dirs(const char *dir)
{
    size_t dlen = strlen(dir);
    for (size_t i = 0; i < sizeof code_dirs / sizeof *code_dirs; i++) {
        const char *tail = code_dirs[i];
        size_t tlen = strlen(tail);
        if (tlen == 0 || tlen >= dlen || dir[dlen - tlen - 1] != '/' ||
            strcmp(dir + dlen - tlen, tail) != 0 || strstr(tail, "..")) {
            continue;
        }
        int root = (int)(dlen - tlen - 1);
        return ptk__asprintf("%.*s/" PTK_REL_PLUGINDIR ":%.*s/plugins", root,
                             dir, root, dir);
    }
    return ptk__asprintf("%s/pytracekit/plugins", dir);
}

/* The search path, ':'-separated: extra, $PYTRACEKIT_PLUGIN_PATH, the
 * built-in plugin directories. Never the current directory: empty and
 * relative entries are dropped. */
static char *
search_path(const char *extra)
{
    const char *env = getenv("PYTRACEKIT_PLUGIN_PATH");
    char *libdir = ptk__library_dir();
    char *builtin = libdir ? builtin_dirs(libdir) : NULL;
    char *p = ptk__asprintf("%s:%s:%s", extra ? extra : "", env ? env : "",
                            builtin ? builtin : "");
    free(builtin);
    free(libdir);
    return p;
}

typedef int (*dir_fn)(const char *dir, void *data);

/* Calls fn for each usable directory of the search path until it returns
 * non-zero; returns that value. */
static int
each_dir(const char *extra, dir_fn fn, void *data)
{
    char *path = search_path(extra);
    if (path == NULL) {
        return PTK_ENOMEM;
    }
    int rc = 0;
    char *save = NULL;
    for (char *d = strtok_r(path, ":", &save); d != NULL && rc == 0;
         d = strtok_r(NULL, ":", &save)) {
        if (d[0] != '/') {
            continue; /* relative entries would depend on the cwd */
        }
        rc = fn(d, data);
    }
    free(path);
    return rc;
}

struct find_ctx {
    const char *name;
    char *found;
    char *looked;  /* the directories searched that exist */
    char *nearest; /* the closest plugin name seen, for "did you mean" */
    size_t nearest_d;
};

/* Notes the NAME.so files of @p dir close to the name looked for. */
static void
note_nearest(struct find_ctx *f, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 4 || n > 66 || strcmp(e->d_name + n - 3, ".so") != 0) {
            continue;
        }
        char stem[64];
        memcpy(stem, e->d_name, n - 3);
        stem[n - 3] = '\0';
        size_t dist = ptk__edit_distance(f->name, stem);
        if (dist <= 2 && dist < strlen(stem) && (f->nearest == NULL || dist < f->nearest_d)) {
            char *c = ptk__strdup(stem);
            if (c != NULL) {
                free(f->nearest);
                f->nearest = c;
                f->nearest_d = dist;
            }
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

static int
find_in_dir(const char *dir, void *data)
{
    struct find_ctx *f = data;
    char *cand = ptk__asprintf("%s/%s.so", dir, f->name);
    if (cand == NULL) {
        return PTK_ENOMEM;
    }
    struct stat st;
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
        f->found = realpath(cand, NULL);
        if (f->found == NULL) {
            f->found = cand;
        }
        else {
            free(cand);
        }
        return 1;
    }
    free(cand);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return 0; /* not there: not worth naming */
    }
    note_nearest(f, dir);
    char *looked = ptk__asprintf("%s%s%s", f->looked ? f->looked : "",
                                 f->looked ? ", " : "", dir);
    free(f->looked);
    f->looked = looked;
    return 0;
}

int
ptk__validate_desc(const ptk_plugin_desc *d, const char *where,
                   unsigned int events, char **errmsg)
{
    if (d == NULL) {
        return ptk__err(errmsg, PTK_ENOENTRY,
                        "plugin %s: ptk_plugin_entry returned NULL "
                        "(expected a descriptor)",
                        where);
    }
    if (d->struct_size < sizeof(size_t) + 2 * sizeof(uint16_t)) {
        return ptk__err(errmsg, PTK_ESIZE,
                        "plugin %s: descriptor struct_size is %zu, at least "
                        "%zu expected",
                        where, d->struct_size, sizeof(ptk_plugin_desc));
    }
    if (d->abi_major != PTK_ABI_MAJOR) {
        return ptk__err(errmsg, PTK_EABIMAJOR,
                        "plugin %s was built for plugin ABI %u.%u, this host "
                        "has ABI %d.%d (the major version must match)",
                        where, d->abi_major, d->abi_minor, PTK_ABI_MAJOR,
                        PTK_ABI_MINOR);
    }
    if (d->abi_minor > PTK_ABI_MINOR) {
        return ptk__err(errmsg, PTK_EABIMINOR,
                        "plugin %s needs plugin ABI %u.%u, this host has ABI "
                        "%d.%d (rebuild it against these headers or use a "
                        "newer pytracekit)",
                        where, d->abi_major, d->abi_minor, PTK_ABI_MAJOR,
                        PTK_ABI_MINOR);
    }
    /* Every minor only appends: a descriptor of 1.0's size (up to `fini`)
     * is complete for any 1.x; the members it lacks read as NULL. */
    const size_t size_1_0 = offsetof(ptk_plugin_desc, fini) + sizeof d->fini;
    if (d->struct_size < size_1_0) {
        return ptk__err(errmsg, PTK_ESIZE,
                        "plugin %s: descriptor struct_size is %zu, at least "
                        "%zu expected for ABI %d.%d",
                        where, d->struct_size, size_1_0, d->abi_major,
                        d->abi_minor);
    }
    if (d->name == NULL || d->name[0] == '\0') {
        return ptk__err(errmsg, PTK_EINVAL,
                        "plugin %s: descriptor has no name", where);
    }
    if (events & ~(unsigned)PTK_MASK_VALID) {
        return ptk__err(errmsg, PTK_EMASK,
                        "plugin '%s': event mask 0x%x has bits that name no "
                        "event (valid: 0x%x)",
                        d->name, events, (unsigned)PTK_MASK_VALID);
    }
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        if (!(events & PTK_MASK(k))) {
            continue;
        }
        int ref = (PTK_MASK(k) & PTK_MASK_REF) != 0;
        if (ref ? d->on_ref == NULL : d->on_event == NULL) {
            return ptk__err(errmsg, PTK_EMASK,
                            "plugin '%s' subscribes to '%s' but has no %s "
                            "callback",
                            d->name, ptk_event_name(k),
                            ref ? "on_ref" : "on_event");
        }
    }
    for (const ptk_option_spec *s = d->options; s && s->name; s++) {
        if (s->type < PTK_OPT_BOOL || s->type > PTK_OPT_LIST ||
            (s->type == PTK_OPT_CHOICE && s->choices == NULL)) {
            return ptk__err(errmsg, PTK_EINVAL,
                            "plugin '%s': option '%s' has an invalid type",
                            d->name, s->name);
        }
    }
    if (events & PTK_MASK_REF) {
        return ptk__ref_check_available(d->name, errmsg);
    }
    return PTK_OK;
}

/* Reads the start of a file and checks it before dlopen maps it (a
 * truncated shared object would raise SIGBUS in the loader). */
static int
precheck(const char *file, char *why, size_t whylen)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return -1;
    }
    struct stat st;
    unsigned char *head = malloc(PTK__ELF_HEAD);
    ssize_t n = head != NULL && fstat(fd, &st) == 0
                    ? pread(fd, head, PTK__ELF_HEAD, 0)
                    : -1;
    int rc;
    if (n < 0) {
        snprintf(why, whylen, "%s", head ? strerror(errno) : "out of memory");
        rc = -1;
    }
    else {
        rc = ptk__elf_check(head, (size_t)n, (uint64_t)st.st_size, why, whylen);
    }
    free(head);
    close(fd);
    return rc;
}

/* Opens one file and returns its descriptor, without the mask checks
 * (which depend on options); *dl receives the handle. */
static int
open_plugin(const char *file, const ptk_plugin_desc **desc, void **dl,
            char **errmsg)
{
    struct stat st;
    if (stat(file, &st) != 0) {
        return ptk__err(errmsg, PTK_ENOENT,
                        "cannot load plugin '%s': no such file", file);
    }
    if (!S_ISREG(st.st_mode)) {
        return ptk__err(errmsg, PTK_ENOTSO,
                        "cannot load plugin '%s': not a regular file "
                        "(expected a shared object)",
                        file);
    }
    char why[256];
    if (precheck(file, why, sizeof why) < 0) {
        return ptk__err(errmsg, PTK_ENOTSO,
                        "cannot load plugin '%s': not a loadable shared "
                        "object (%s)",
                        file, why);
    }
    dlerror();
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *dl_why = dlerror();
        return ptk__err(errmsg, PTK_ENOTSO,
                        "cannot load plugin '%s': not a loadable shared "
                        "object (%s)",
                        file, dl_why ? dl_why : "dlopen failed");
    }
    ptk_plugin_entry_fn entry;
    *(void **)&entry = dlsym(h, "ptk_plugin_entry");
    if (entry == NULL) {
        dlclose(h);
        return ptk__err(errmsg, PTK_ENOENTRY,
                        "cannot load plugin '%s': it has no ptk_plugin_entry "
                        "function (expected one, as PTK_PLUGIN_DEFINE writes)",
                        file);
    }
    *desc = entry();
    *dl = h;
    return PTK_OK;
}

int
ptk__load(const char *path_or_name, const char *extra_path,
          const ptk_plugin_desc **desc, void **dl, char **found_path,
          char **errmsg)
{
    char *file = NULL;
    if (strchr(path_or_name, '/') != NULL) {
        file = realpath(path_or_name, NULL);
        if (file == NULL) {
            return ptk__err(errmsg, PTK_ENOENT,
                            "cannot load plugin '%s': no such file",
                            path_or_name);
        }
    }
    else {
        struct find_ctx f = {path_or_name, NULL, NULL, NULL, 0};
        int rc = each_dir(extra_path, find_in_dir, &f);
        if (rc < 0) {
            free(f.looked);
            free(f.nearest);
            return ptk__err(errmsg, rc, "out of memory");
        }
        if (f.found == NULL) {
            rc = ptk__err(errmsg, PTK_ENOENT,
                          "plugin '%s' not found: no %s.so in %s%s%s%s (give a "
                          "path with a '/', or add a directory with "
                          "--plugin-path or PYTRACEKIT_PLUGIN_PATH)",
                          path_or_name, path_or_name,
                          f.looked ? f.looked : "any plugin directory (none exists)",
                          f.nearest ? "; did you mean '" : "",
                          f.nearest ? f.nearest : "", f.nearest ? "'?" : "");
            free(f.looked);
            free(f.nearest);
            return rc;
        }
        free(f.looked);
        free(f.nearest);
        file = f.found;
    }
    int rc = open_plugin(file, desc, dl, errmsg);
    if (rc < 0) {
        free(file);
        return rc;
    }
    *found_path = file;
    return PTK_OK;
}

/* ---- --list-plugins -------------------------------------------------- */

struct scan_ctx {
    void (*fn)(const char *, const ptk_plugin_desc *, const char *, void *);
    void *data;
    char **seen;
    size_t nseen;
};

static int
scan_dir(const char *dir, void *data)
{
    struct scan_ctx *sc = data;
    DIR *dp = opendir(dir);
    if (dp == NULL) {
        return 0;
    }
    struct dirent **list = NULL;
    int n = scandir(dir, &list, NULL, alphasort);
    closedir(dp);
    for (int i = 0; i < n; i++) {
        const char *fn = list[i]->d_name;
        size_t len = strlen(fn);
        if (len > 3 && strcmp(fn + len - 3, ".so") == 0) {
            char *base = ptk__strdup(fn);
            base[len - 3] = '\0';
            int dup = 0;
            for (size_t j = 0; j < sc->nseen; j++) {
                dup |= strcmp(sc->seen[j], base) == 0;
            }
            if (dup) {
                free(base);
            }
            else {
                char **ns = realloc(sc->seen, (sc->nseen + 1) * sizeof *ns);
                if (ns != NULL) {
                    sc->seen = ns;
                    sc->seen[sc->nseen++] = base;
                }
                char *file = ptk__asprintf("%s/%s", dir, fn);
                const ptk_plugin_desc *d = NULL;
                void *h = NULL;
                char *err = NULL;
                int rc = open_plugin(file, &d, &h, &err);
                if (rc == PTK_OK) {
                    rc = ptk__validate_desc(d, file, d ? d->events : 0, &err);
                }
                sc->fn(file, rc == PTK_OK ? d : NULL, err, sc->data);
                free(err);
                free(file);
                /* the handle stays open: desc strings may be in use */
            }
        }
        free(list[i]);
    }
    free(list);
    return 0;
}

int
ptk_plugin_scan(const char *plugin_path,
                void (*fn)(const char *file, const ptk_plugin_desc *desc,
                           const char *error, void *data),
                void *data)
{
    struct scan_ctx sc = {fn, data, NULL, 0};
    int rc = each_dir(plugin_path, scan_dir, &sc);
    for (size_t j = 0; j < sc.nseen; j++) {
        free(sc.seen[j]);
    }
    free(sc.seen);
    return rc < 0 ? rc : PTK_OK;
}
