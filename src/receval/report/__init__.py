"""What a person reads: summary tables (rich, JSON, CSV, Markdown, LaTeX), plots, the HTML
report and the notebook view. Plots and the HTML report need ``pip install 'receval[plot]'``
(matplotlib, jinja2)."""
