//go:build ignore

// Makes testdata/fpdf-multilingual.pdf with the go-pdf/fpdf writer: two
// pages, two embedded TrueType fonts (DejaVu Sans and Serif, subset, with
// ToUnicode maps), compressed streams, text in Russian, Greek and Czech.
// Run from a scratch module that requires github.com/go-pdf/fpdf:
//
//	go run fpdf.go /usr/share/fonts/truetype/dejavu out.pdf
package main

import (
	"os"
	"time"

	"github.com/go-pdf/fpdf"
)

func main() {
	dir, out := os.Args[1], os.Args[2]
	p := fpdf.New("P", "mm", "A5", dir)
	p.SetCompression(true)
	p.SetCreationDate(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p.SetModificationDate(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p.AddUTF8Font("sans", "", "DejaVuSans.ttf")
	p.AddUTF8Font("serif", "", "DejaVuSerif.ttf")
	p.AddPage()
	p.SetFont("sans", "", 14)
	p.Cell(0, 10, "Отчёт о работе шлюза")
	p.Ln(12)
	p.SetFont("serif", "", 11)
	p.MultiCell(0, 6, "Шлюз обработал сорок два миллиона запросов.", "", "", false)
	p.MultiCell(0, 6, "Η πύλη εξυπηρέτησε σαράντα δύο εκατομμύρια αιτήματα.", "", "", false)
	p.AddPage()
	p.SetFont("sans", "", 11)
	p.MultiCell(0, 6, "Druhá strana: příliš žluťoučký kůň úpěl ďábelské ódy.", "", "", false)
	if err := p.OutputFileAndClose(out); err != nil {
		panic(err)
	}
}
