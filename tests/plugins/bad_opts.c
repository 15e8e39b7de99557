/* bad_opts: a well-formed plugin with one option of each type, for the
 * option rejections (unknown key, value of the wrong type), and with an
 * `init` option that makes its init callback misbehave:
 *   init=ok      start normally (counts nothing, writes no report)
 *   init=fail    return PTK_EIO with a reason in errbuf
 *   init=python  raise RuntimeError and return PTK_EPYTHON
 *   init=mask    succeed but widen the mask to 'line', for which it has
 *                no callback (on_event is NULL): PTK_EMASK after init
 * Options: n (int), flag (bool), mode (choice fast|slow|off), ratio
 * (number), label (text), items (list). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pytracekit/plugin.h>

static const ptk_option_spec options[] = {
    {"n", PTK_OPT_INT, "3", "an integer", NULL},
    {"flag", PTK_OPT_BOOL, "false", "a boolean", NULL},
    {"mode", PTK_OPT_CHOICE, "fast", "a choice", "fast|slow|off"},
    {"ratio", PTK_OPT_DOUBLE, "0.5", "a number", NULL},
    {"label", PTK_OPT_STRING, NULL, "some text", NULL},
    {"items", PTK_OPT_LIST, NULL, "a list", NULL},
    {"init", PTK_OPT_CHOICE, "ok", "how init behaves", "ok|fail|python|mask"},
    {NULL, 0, NULL, NULL, NULL},
};

static int
opts_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    *state = NULL;
    switch (args->host->option(args, "init")->i) {
    case 1:
        snprintf(args->errbuf, args->errbuf_size,
                 "bad_opts refuses to start as asked (init=fail)");
        return PTK_EIO;
    case 2:
        PyErr_SetString(PyExc_RuntimeError, "bad_opts init raised as asked");
        return PTK_EPYTHON;
    case 3:
        *events |= PTK_MASK(PTK_EV_LINE);
        return PTK_OK;
    default:
        return PTK_OK;
    }
}

static int
opts_report(void *state, const ptk_report_args *args)
{
    (void)state;
    fprintf(args->summary, "bad_opts: nothing to report\n");
    return PTK_OK;
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "bad_opts",
    .version = "1",
    .description = "test plugin: one option of each type",
    .events = 0,
    .options = options,
    .init = opts_init,
    .report = opts_report,
};

PTK_PLUGIN_DEFINE(desc)
