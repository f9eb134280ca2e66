"""The loss plot (PNG) with gnuplot (Debian's gnuplot-nox; matplotlib is not installed here):
training loss of the main and MTP heads per step (a running mean), validation loss and exact-match
accuracy at each evaluation, against training samples seen."""

import os
import shutil
import subprocess


def loss_png(train_tsv, val_tsv, out_png, title="training"):
    """Returns out_png, or None when gnuplot is missing (the TSV files are still there)."""
    gp = shutil.which("gnuplot")
    if gp is None:
        return None
    has_val = os.path.exists(val_tsv) and sum(1 for _ in open(val_tsv)) > 1
    script = [
        "set terminal pngcairo size 1000,560 font ',10'",
        "set output '%s'" % out_png,
        "set title '%s'" % title.replace("'", ""),
        "set xlabel 'training samples'",
        "set ylabel 'loss (nats per answer token)'",
        "set logscale y",
        "set grid",
        "set key top right",
    ]
    plots = ["'%s' using 2:7 with lines lw 2 title 'train, main head (running mean)'" % train_tsv,
             "'%s' using 2:8 with lines lw 2 title 'train, MTP head (running mean)'" % train_tsv]
    if has_val:
        script += ["set y2label 'validation exact match'", "set y2range [0:1]", "set y2tics", "set ytics nomirror"]
        plots += ["'%s' using 2:3 with linespoints pt 7 title 'validation, main head'" % val_tsv,
                  "'%s' using 2:4 with linespoints pt 5 title 'validation, MTP head'" % val_tsv,
                  "'%s' using 2:6 axes x1y2 with linespoints pt 9 dt 2 title 'validation exact match (right axis)'"
                  % val_tsv]
    script.append("plot " + ", ".join(plots))
    subprocess.run([gp], input="\n".join(script) + "\n", text=True, check=True)
    return out_png
