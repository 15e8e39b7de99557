/* A plugin's embedded Python module (embed_module.h). */
#include "embed_module.h"

#include <marshal.h>

#include "py_import.h"

PyObject *
ptk_kit_load_module(const char *name, const char *source, const unsigned char *code_bytes,
                    size_t code_len, unsigned long built_for)
{
    PyObject *mod = PyModule_New(name);
    if (!mod) {
        return NULL;
    }
    PyObject *dict = PyModule_GetDict(mod); /* borrowed */
    PyObject *builtins = ptk_kit_builtins();
    int bad = builtins == NULL ||
              PyDict_SetItemString(dict, "__builtins__", builtins) < 0;
    Py_XDECREF(builtins);
    if (bad) {
        Py_DECREF(mod);
        return NULL;
    }
    PyObject *code = NULL;
    if (code_bytes && (unsigned long)(Py_Version >> 16) == built_for) {
        code = PyMarshal_ReadObjectFromString((const char *)code_bytes, (Py_ssize_t)code_len);
        if (!code || !PyCode_Check(code)) {
            Py_CLEAR(code);
            PyErr_Clear();
        }
    }
    if (!code) {
        code = Py_CompileString(source, name, Py_file_input);
    }
    if (!code) {
        Py_DECREF(mod);
        return NULL;
    }
    PyObject *res = PyEval_EvalCode(code, dict, dict);
    Py_DECREF(code);
    if (!res) {
        Py_DECREF(mod);
        return NULL;
    }
    Py_DECREF(res);
    Py_INCREF(dict);
    Py_DECREF(mod); /* the dict keeps the functions' globals alive */
    return dict;
}
