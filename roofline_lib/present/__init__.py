"""present: what the reader sees: plots, widgets, prose values, the site's export, JupyterLab's contents manager.

Imported module by module (``from roofline_lib.present import plots``): it needs matplotlib or ipywidgets.
"""
