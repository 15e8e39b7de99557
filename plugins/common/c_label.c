/* One cProfile-faithful name for a C callable (see c_label.h). */
#include "c_label.h"

/* The method's receiver and definition: a method descriptor with its self
 * stands for the bound method. Returns 0 when @p obj is neither. */
static int
c_parts(PyObject *obj, PyObject *cself, PyMethodDef **ml, PyObject **self,
        PyObject **module)
{
    if (Py_IS_TYPE(obj, &PyMethodDescr_Type) && cself != NULL) {
        *ml = ((PyMethodDescrObject *)obj)->d_method;
        *self = cself;
        *module = NULL;
        return 1;
    }
    if (!PyCFunction_Check(obj)) {
        return 0;
    }
    PyCFunctionObject *fn = (PyCFunctionObject *)obj;
    *ml = fn->m_ml;
    *self = fn->m_self;
    *module = fn->m_module;
    return 1;
}

/* A new reference to the attribute @p name on type(@p self), or NULL
 * (no exception). */
static PyObject *
c_type_attr(PyObject *self, const char *name)
{
    PyObject *pyname = PyUnicode_FromString(name);
    if (pyname == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *mo = _PyType_Lookup(Py_TYPE(self), pyname);
    Py_XINCREF(mo);
    Py_DECREF(pyname);
    return mo;
}

static PyObject *
c_function_label(const char *name, PyObject *mod)
{
    PyObject *modname = NULL;
    if (mod != NULL && PyUnicode_Check(mod)) {
        modname = Py_NewRef(mod);
    }
    else if (mod != NULL && PyModule_Check(mod)) {
        modname = PyModule_GetNameObject(mod);
        if (modname == NULL) {
            PyErr_Clear();
        }
    }
    if (modname != NULL) {
        PyObject *res = NULL;
        if (PyUnicode_CompareWithASCIIString(modname, "builtins") != 0) {
            res = PyUnicode_FromFormat("<%U.%s>", modname, name);
        }
        Py_DECREF(modname);
        if (res != NULL) {
            return res;
        }
    }
    return PyUnicode_FromFormat("<%s>", name);
}

PyObject *
ptk_kit_c_label(PyObject *callable, PyObject *cself)
{
    PyMethodDef *ml;
    PyObject *self, *module;
    if (!c_parts(callable, cself, &ml, &self, &module)) {
        return PyUnicode_FromFormat("<%s object>", Py_TYPE(callable)->tp_name);
    }
    if (self == NULL) {
        return c_function_label(ml->ml_name, module);
    }
    PyObject *mo = c_type_attr(self, ml->ml_name);
    if (mo != NULL) {
        PyObject *res = PyObject_Repr(mo);
        Py_DECREF(mo);
        if (res != NULL) {
            return res;
        }
    }
    PyErr_Clear();
    if (module != NULL && PyUnicode_Check(module)) {
        return PyUnicode_FromFormat("<built-in method %U.%s>", module,
                                    ml->ml_name);
    }
    return PyUnicode_FromFormat("<built-in method %s>", ml->ml_name);
}

PyObject *
ptk_kit_c_display(PyObject *label)
{
    Py_ssize_t n = PyUnicode_GetLength(label);
    if (n >= 2 && PyUnicode_READ_CHAR(label, 0) == '<' &&
        PyUnicode_READ_CHAR(label, n - 1) == '>') {
        PyObject *in = PyUnicode_Substring(label, 1, n - 1);
        if (in == NULL) {
            return NULL;
        }
        PyObject *res = PyUnicode_FromFormat("{%U}", in);
        Py_DECREF(in);
        return res;
    }
    return Py_NewRef(label);
}

static PyObject *
attr_or_none(PyObject *o, const char *name)
{
    PyObject *v = PyObject_GetAttrString(o, name);
    if (v == NULL) {
        PyErr_Clear();
        v = Py_NewRef(Py_None);
    }
    return v;
}

/* The class that defines method @p ml as seen from @p self: for an
 * instance, where type(self)'s MRO finds it; for a class (class and static
 * methods), where the class's own MRO finds it. Borrowed. */
static PyObject *
c_owner(PyMethodDef *ml, PyObject *self)
{
    PyTypeObject *type = PyType_Check(self) ? (PyTypeObject *)self
                                            : Py_TYPE(self);
    PyObject *pyname = PyUnicode_FromString(ml->ml_name);
    if (pyname == NULL) {
        PyErr_Clear();
        return (PyObject *)type;
    }
    PyObject *mo = _PyType_Lookup(type, pyname);
    Py_DECREF(pyname);
    if (mo != NULL && (Py_IS_TYPE(mo, &PyMethodDescr_Type) || Py_IS_TYPE(mo, &PyClassMethodDescr_Type)) &&
        ((PyMethodDescrObject *)mo)->d_method == ml) {
        return (PyObject *)PyDescr_TYPE(mo);
    }
    return (PyObject *)type;
}

PyObject *
ptk_kit_c_names(PyObject *callable, PyObject *cself)
{
    PyMethodDef *ml;
    PyObject *self, *module;
    if (!c_parts(callable, cself, &ml, &self, &module) || self == NULL ||
        PyModule_Check(self)) {
        return Py_BuildValue("(NNN)", attr_or_none(callable, "__name__"),
                             attr_or_none(callable, "__qualname__"),
                             attr_or_none(callable, "__module__"));
    }
    PyObject *tq = PyObject_GetAttrString(c_owner(ml, self), "__qualname__");
    if (tq == NULL) {
        return NULL;
    }
    PyObject *res = Py_BuildValue("(sNO)", ml->ml_name,
                                  PyUnicode_FromFormat("%S.%s", tq, ml->ml_name),
                                  Py_None);
    Py_DECREF(tq);
    return res;
}
