/*
 * Shared by the shipped plugins that name C callables (counter, timer,
 * timeline): one way to name them, the way cProfile does, so that every
 * report agrees with cProfile and pstats on the same program.
 *
 * Compiled into each plugin (plugins/common/c_label.c), hidden.
 */
#ifndef PTK_PLUGINS_C_LABEL_H
#define PTK_PLUGINS_C_LABEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/**
 * @brief cProfile's label for a C callable (normalizeUserObj in
 * Modules/_lsprof.c): "<mod.name>" or "<name>" (builtins) for a function
 * without self; for a method, the repr of the attribute found on type(self)
 * ("<method 'append' of 'list' objects>", the same for a subclass of list),
 * else "<built-in method [mod.]name>".
 *
 * A method descriptor with its self (#PTK_FLAG_UNBOUND_C, @p cself not
 * NULL) is named as the bound method it stands for. Any other callable is
 * "<TYPE object>" (cProfile does not see those).
 *
 * @param callable the event's callable (ptk_event::arg)
 * @param cself    ptk_event::c_self, or NULL
 * @return a new reference, or NULL with an exception set
 */
PyObject *ptk_kit_c_label(PyObject *callable, PyObject *cself);

/**
 * @brief The label as pstats prints it (func_std_string): "<...>" becomes
 * "{...}", as in "{method 'append' of 'list' objects}".
 *
 * @param label a label from ptk_kit_c_label()
 * @return a new reference, or NULL with an exception set
 */
PyObject *ptk_kit_c_display(PyObject *label);

/**
 * @brief (name, qualname, module) of a C callable, the qualname after the
 * class that defines the method ("list.append" for a subclass of list too),
 * module None for methods.
 *
 * @param callable the event's callable (ptk_event::arg)
 * @param cself    ptk_event::c_self, or NULL
 * @return a new 3-tuple, or NULL with an exception set
 */
PyObject *ptk_kit_c_names(PyObject *callable, PyObject *cself);

#endif
