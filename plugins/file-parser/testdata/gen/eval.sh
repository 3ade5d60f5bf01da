#!/usr/bin/env bash
# Rebuilds the file-parser evaluation set (testdata/eval) from the sources
# in gen/eval. Debian 12: groff, ghostscript, librsvg2-bin, qpdf, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
E=eval
mkdir -p $E/heldout
python3 gen/handpdf.py $E
groff -ms -Tpdf gen/eval/a.ms > $E/groff-ferry.pdf
groff -ms -Tpdf gen/eval/b.ms > $E/heldout/groff-sourdough.pdf
# Two columns: groff -ms .2C (column by column) and a generator drawing by
# baseline across both columns (row by row).
groff -ms -Tpdf gen/eval/k.ms > $E/twocol-groff-lighthouse.pdf
groff -ms -Tpdf gen/eval/l.ms > $E/heldout/twocol-groff-water.pdf
python3 gen/twocol.py $E
groff -ms -Tps gen/eval/a.ms | gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfwrite -sOutputFile=$E/gs-groff-ferry.pdf -
groff -ms -Tps gen/eval/b.ms | gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfwrite -sOutputFile=$E/heldout/gs-groff-sourdough.pdf -
ps2pdf gen/eval/c.ps $E/ps2pdf-library.pdf
ps2pdf gen/eval/d.ps $E/heldout/ps2pdf-allotment.pdf
rsvg-convert -f pdf -o $E/cairo-survey.pdf gen/eval/e.svg
rsvg-convert -f pdf -o $E/heldout/cairo-orchard.pdf gen/eval/f.svg
qpdf --object-streams=generate --compress-streams=y $E/hand-invoice.pdf $E/qpdf-invoice.pdf
qpdf --object-streams=generate --compress-streams=y $E/groff-ferry.pdf $E/qpdf-groff-ferry.pdf
qpdf --object-streams=generate --compress-streams=y $E/heldout/hand-letter.pdf $E/heldout/qpdf-letter.pdf
# LaTeX (pdfTeX, TeX Live 2022): Type 1 Computer Modern subsets, ligatures.
tmp=$(mktemp -d)
(cd "$tmp" && pdflatex -interaction=batchmode "$OLDPWD/gen/eval/g.tex" >/dev/null && pdflatex -interaction=batchmode "$OLDPWD/gen/eval/h.tex" >/dev/null)
cp "$tmp/g.pdf" $E/latex-migration.pdf
cp "$tmp/h.pdf" $E/heldout/latex-castiron.pdf
rm -r "$tmp"
# LibreOffice 7.4 (Debian 12 libreoffice-writer-nogui): HTML through Writer.
tmp=$(mktemp -d)
soffice --headless --infilter="HTML (StarWriter)" --convert-to pdf --outdir "$tmp" gen/eval/i.html gen/eval/j.html >/dev/null
cp "$tmp/i.pdf" $E/libreoffice-pool.pdf
cp "$tmp/j.pdf" $E/heldout/libreoffice-repair.pdf
rm -r "$tmp"
