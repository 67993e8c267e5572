"""Generate the bundled free-text QA dataset: 200 short-answer questions in five topics.

Every question has one short reference answer (1-6 words, SQuAD style) that is a
stable fact -- capitals, chemical symbols, dates of historical events, unit
conversions, arithmetic, authors of classic works -- so it stays right whatever year
the demo runs in. Each row's metadata says what kind of answer it is (``entity``,
``number``, ``date``, ``yes_no``, ``short_phrase``), lists other acceptable short
forms (``accept``, when there are any) and names a ``distractor``: the plausible wrong
answer a model would give (a neighbouring country's capital, a nearby year, a
unit-confused number, the opposite yes/no). The demo systems of
:mod:`arbiter.demo.qa` answer from these rows.

The rows are written here as data, in topic order; the file interleaves the topics
(``qa-001`` geography, ``qa-002`` science, ...) so the first N examples of a
``--limit N`` run cover every topic. No randomness: the file is reproducible byte for
byte::

    python scripts/make_qa_dataset.py                     # rewrite the bundled file
    python scripts/make_qa_dataset.py --out /tmp/qa.jsonl  # write elsewhere
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, zip_longest
from pathlib import Path
from typing import Literal

from arbiter.contract import Example

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "src/arbiter/demo/data/qa.jsonl"
"""Where the bundled dataset lives."""

Kind = Literal["entity", "number", "date", "yes_no", "short_phrase"]


@dataclass(frozen=True)
class Question:
    """One row as written: the question, its reference answer and what to say of it."""

    question: str
    expected: str
    kind: Kind
    distractor: str
    accept: tuple[str, ...] = ()


def q(question: str, expected: str, kind: Kind, distractor: str, *accept: str) -> Question:
    """A row, positionally: question, answer, kind, distractor, then any accepted forms."""
    return Question(question, expected, kind, distractor, accept)


# One row per call, wrapped by hand: the tables read better than exploded calls.
# fmt: off
GEOGRAPHY = (
    q("What is the capital of France?", "Paris", "entity", "Lyon"),
    q("What is the capital of Australia?", "Canberra", "entity", "Sydney"),
    q("What is the capital of Canada?", "Ottawa", "entity", "Toronto"),
    q("What is the capital of Japan?", "Tokyo", "entity", "Kyoto"),
    q("What is the capital of Brazil?", "Brasília", "entity", "Rio de Janeiro", "Brasilia"),
    q("What is the capital of Turkey?", "Ankara", "entity", "Istanbul"),
    q("What is the capital of Ireland?", "Dublin", "entity", "Cork"),
    q("What is the capital of Kenya?", "Nairobi", "entity", "Mombasa"),
    q("What is the capital of Argentina?", "Buenos Aires", "entity", "Montevideo"),
    q("What is the capital of Portugal?", "Lisbon", "entity", "Porto", "Lisboa"),
    q("What is the capital of New Zealand?", "Wellington", "entity", "Auckland"),
    q("What is the capital of Hungary?", "Budapest", "entity", "Vienna"),
    q("What is the capital of Morocco?", "Rabat", "entity", "Casablanca"),
    q("What is the capital of Vietnam?", "Hanoi", "entity", "Ho Chi Minh City", "Ha Noi"),
    q("What is the capital of Peru?", "Lima", "entity", "Quito"),
    q("What is the capital of Nigeria?", "Abuja", "entity", "Lagos"),
    q("What is the capital of Pakistan?", "Islamabad", "entity", "Karachi"),
    q("What is the capital of the US state of California?", "Sacramento", "entity", "Los Angeles"),
    q("What is the longest river in Africa?", "Nile", "entity", "Congo", "the Nile", "River Nile"),
    q("What is the largest ocean on Earth?", "Pacific Ocean", "entity", "Atlantic Ocean", "Pacific",
      "the Pacific"),
    q("On which continent is Mount Kilimanjaro?", "Africa", "entity", "Asia"),
    q("What is the highest mountain above sea level?", "Mount Everest", "entity", "K2", "Everest"),
    q("Which country has the largest land area in the world?", "Russia", "entity", "Canada",
      "Russian Federation"),
    q("What is the largest desert in Africa?", "Sahara", "entity", "Kalahari", "Sahara Desert",
      "the Sahara"),
    q("Which river flows through London?", "Thames", "entity", "Severn", "River Thames",
      "the Thames"),
    q("Which strait separates Spain from Morocco?", "Strait of Gibraltar", "entity", "Bosporus",
      "Gibraltar"),
    q("In which country is Machu Picchu?", "Peru", "entity", "Bolivia"),
    q("What is the smallest country in the world by area?", "Vatican City", "entity", "Monaco",
      "Vatican", "Holy See"),
    q("Which two countries share the longest international land border?",
      "Canada and the United States", "short_phrase", "Russia and Kazakhstan",
      "United States and Canada", "Canada and the USA"),
    q("Which ocean lies between Africa and Australia?", "Indian Ocean", "entity", "Pacific Ocean",
      "Indian"),
    q("Which mountain range is the conventional border between Europe and Asia in Russia?",
      "Ural Mountains", "entity", "Caucasus Mountains", "Urals", "the Urals"),
    q("In which country is the city of Timbuktu?", "Mali", "entity", "Niger"),
    q("Which two rivers enclose ancient Mesopotamia?", "Tigris and Euphrates", "short_phrase",
      "Nile and Jordan", "Euphrates and Tigris"),
    q("What is the largest island in the world that is not a continent?", "Greenland", "entity",
      "New Guinea"),
    q("Which sea lies between Italy and Croatia?", "Adriatic Sea", "entity", "Aegean Sea",
      "Adriatic", "the Adriatic"),
    q("In which country is the city of Kraków?", "Poland", "entity", "Czech Republic"),
    q("What is the deepest lake in the world?", "Lake Baikal", "entity", "Lake Tanganyika",
      "Baikal"),
    q("Does the equator pass through Brazil?", "Yes", "yes_no", "No"),
    q("Does the Danube flow into the Black Sea?", "Yes", "yes_no", "No"),
    q("Is Sydney the capital of Australia?", "No", "yes_no", "Yes"),
)

SCIENCE = (
    q("What is the chemical symbol for gold?", "Au", "entity", "Ag"),
    q("What is the chemical symbol for sodium?", "Na", "entity", "K"),
    q("What is the chemical symbol for iron?", "Fe", "entity", "Ir"),
    q("What is the chemical symbol for silver?", "Ag", "entity", "Au"),
    q("What is the atomic number of carbon?", "6", "number", "12", "six"),
    q("What is the atomic number of oxygen?", "8", "number", "16", "eight"),
    q("Which element has the chemical symbol K?", "potassium", "entity", "krypton"),
    q("What is the chemical formula of table salt?", "NaCl", "entity", "KCl"),
    q("Which gas do plants absorb from the air for photosynthesis?", "carbon dioxide",
      "short_phrase", "oxygen", "CO2"),
    q("What is the boiling point of water at sea level in degrees Celsius?", "100", "number", "212",
      "100 °C", "100 degrees Celsius"),
    q("What is the freezing point of water at sea level in degrees Fahrenheit?", "32", "number",
      "0", "32 °F", "32 degrees Fahrenheit"),
    q("Which planet is closest to the Sun?", "Mercury", "entity", "Venus"),
    q("Which is the largest planet in the Solar System?", "Jupiter", "entity", "Saturn"),
    q("Which planet is known as the Red Planet?", "Mars", "entity", "Venus"),
    q("How many planets are in the Solar System?", "8", "number", "9", "eight"),
    q("Which mineral has a hardness of 10 on the Mohs scale?", "diamond", "entity", "corundum"),
    q("Which organelle produces most of a cell's ATP?", "mitochondria", "entity", "ribosome",
      "mitochondrion", "the mitochondria"),
    q("What is the speed of light in a vacuum in metres per second?", "299,792,458", "number",
      "299,792", "299792458", "299,792,458 m/s"),
    q("Which blood cells carry oxygen around the body?", "red blood cells", "short_phrase",
      "white blood cells", "erythrocytes"),
    q("What is the most abundant gas in Earth's atmosphere?", "nitrogen", "entity", "oxygen", "N2"),
    q("Which two elements make up water?", "hydrogen and oxygen", "short_phrase",
      "hydrogen and nitrogen", "oxygen and hydrogen"),
    q("Which two kinds of particle make up an atomic nucleus?", "protons and neutrons",
      "short_phrase", "protons and electrons", "neutrons and protons"),
    q("What is the SI unit of force?", "newton", "entity", "joule", "N"),
    q("What is the SI unit of electrical resistance?", "ohm", "entity", "volt", "Ω"),
    q("What is the SI unit of power?", "watt", "entity", "joule", "W"),
    q("Who developed the theory of general relativity?", "Albert Einstein", "entity",
      "Isaac Newton", "Einstein"),
    q("Who formulated the three laws of motion published in the Principia?", "Isaac Newton",
      "entity", "Galileo Galilei", "Newton"),
    q("Who discovered penicillin in 1928?", "Alexander Fleming", "entity", "Louis Pasteur",
      "Fleming"),
    q("Who developed the first smallpox vaccine?", "Edward Jenner", "entity", "Louis Pasteur",
      "Jenner"),
    q('Who wrote "On the Origin of Species"?', "Charles Darwin", "entity", "Gregor Mendel",
      "Darwin"),
    q("How many bones does a typical adult human skeleton have?", "206", "number", "208"),
    q("What is the largest organ of the human body?", "skin", "entity", "liver", "the skin"),
    q("How many chambers does the human heart have?", "4", "number", "3", "four"),
    q("What is the pH of pure water at 25 °C?", "7", "number", "7.4", "7.0"),
    q("Which subatomic particle carries a negative electric charge?", "electron", "entity",
      "proton", "the electron"),
    q("What is the dense centre of an atom called?", "nucleus", "entity", "neutron", "the nucleus",
      "atomic nucleus"),
    q("What force keeps the planets in orbit around the Sun?", "gravity", "entity", "magnetism",
      "gravitation"),
    q("Is a tomato a fruit in botanical terms?", "Yes", "yes_no", "No"),
    q("Can sound travel through a vacuum?", "No", "yes_no", "Yes"),
    q("Is the Sun a star?", "Yes", "yes_no", "No"),
)

HISTORY = (
    q("In what year did World War II end?", "1945", "date", "1944"),
    q("In what year did World War I begin?", "1914", "date", "1918"),
    q("In what year did the Berlin Wall fall?", "1989", "date", "1991"),
    q("In what year did Christopher Columbus first reach the Americas?", "1492", "date", "1498"),
    q("In what year was the United States Declaration of Independence adopted?", "1776", "date",
      "1789"),
    q("In what year did the French Revolution begin?", "1789", "date", "1799"),
    q("In what year did the Titanic sink?", "1912", "date", "1911"),
    q("In what year did humans first land on the Moon?", "1969", "date", "1968"),
    q("In what year was the Battle of Hastings fought?", "1066", "date", "1086"),
    q("In what year did the Bolsheviks seize power in Russia?", "1917", "date", "1905"),
    q("In what year was the Soviet Union dissolved?", "1991", "date", "1989"),
    q("In what year did Nelson Mandela become President of South Africa?", "1994", "date", "1990"),
    q("In what year was the Battle of Waterloo fought?", "1815", "date", "1812"),
    q("In what year did the American Civil War end?", "1865", "date", "1863"),
    q("In what year did the Great Fire of London break out?", "1666", "date", "1665"),
    q("In what year did India gain independence from Britain?", "1947", "date", "1950"),
    q("In what year was Magna Carta first sealed?", "1215", "date", "1225"),
    q("In what year did the attack on Pearl Harbor take place?", "1941", "date", "1942"),
    q("Who was the first person to walk on the Moon?", "Neil Armstrong", "entity", "Buzz Aldrin",
      "Armstrong"),
    q("Who was the first President of the United States?", "George Washington", "entity",
      "John Adams", "Washington"),
    q("Who was the first Roman emperor?", "Augustus", "entity", "Julius Caesar", "Caesar Augustus",
      "Octavian"),
    q("Who was the British prime minister for most of World War II?", "Winston Churchill", "entity",
      "Neville Chamberlain", "Churchill"),
    q("Which Carthaginian general crossed the Alps with war elephants?", "Hannibal", "entity",
      "Hasdrubal", "Hannibal Barca"),
    q("Who was the first woman to win a Nobel Prize?", "Marie Curie", "entity", "Rosalind Franklin",
      "Curie", "Marie Skłodowska-Curie"),
    q("Genghis Khan founded which empire?", "Mongol Empire", "entity", "Ottoman Empire", "Mongol",
      "the Mongols", "Mongolian Empire"),
    q('Who wrote "The Communist Manifesto"?', "Karl Marx and Friedrich Engels", "short_phrase",
      "Vladimir Lenin", "Marx and Engels"),
    q("Which ship carried the Pilgrims to North America in 1620?", "Mayflower", "entity",
      "Santa Maria", "the Mayflower"),
    q("Which French emperor was defeated at Waterloo?", "Napoleon Bonaparte", "entity",
      "Napoleon III", "Napoleon", "Napoleon I"),
    q("Who was the first Chancellor of the German Empire?", "Otto von Bismarck", "entity",
      "Wilhelm I", "Bismarck"),
    q("Who was President of the United States when the Civil War began?", "Abraham Lincoln",
      "entity", "Ulysses S. Grant", "Lincoln"),
    q("Which European first sailed around the Cape of Good Hope?", "Bartolomeu Dias", "entity",
      "Vasco da Gama", "Dias", "Bartholomew Diaz"),
    q("Which civilisation built Machu Picchu?", "Inca", "entity", "Aztecs", "Incas",
      "the Inca Empire"),
    q("Who led the Soviet Union during World War II?", "Joseph Stalin", "entity", "Vladimir Lenin",
      "Stalin"),
    q("Which two cities were struck by atomic bombs in 1945?", "Hiroshima and Nagasaki",
      "short_phrase", "Hiroshima and Tokyo", "Nagasaki and Hiroshima"),
    q("Which two kingdoms fought the Hundred Years' War?", "England and France", "short_phrase",
      "England and Spain", "France and England"),
    q("Who led the first expedition to reach the South Pole?", "Roald Amundsen", "entity",
      "Robert Falcon Scott", "Amundsen"),
    q("Did the Western Roman Empire fall before the year 500 AD?", "Yes", "yes_no", "No"),
    q("Was Napoleon born on Corsica?", "Yes", "yes_no", "No"),
    q("Did the Titanic sink on its maiden voyage?", "Yes", "yes_no", "No"),
    q("Was Julius Caesar the first Roman emperor?", "No", "yes_no", "Yes"),
)

ARITHMETIC_UNITS = (
    q("What is 7 times 8?", "56", "number", "54"),
    q("What is 12 times 12?", "144", "number", "124"),
    q("What is 15 plus 27?", "42", "number", "32"),
    q("What is 100 minus 37?", "63", "number", "73"),
    q("What is 81 divided by 9?", "9", "number", "8", "nine"),
    q("What is the square root of 144?", "12", "number", "14", "twelve"),
    q("What is 2 to the power of 10?", "1024", "number", "2048", "1,024"),
    q("What is 25 percent of 80?", "20", "number", "25"),
    q("What is 3 cubed?", "27", "number", "9"),
    q("What is 1,000 divided by 8?", "125", "number", "128"),
    q("What is 250 minus 175?", "75", "number", "85"),
    q("What is one half plus one quarter, as a decimal?", "0.75", "number", "0.5"),
    q("What is 6 factorial?", "720", "number", "120"),
    q("What are the two prime factors of 15?", "3 and 5", "short_phrase", "3 and 7", "5 and 3"),
    q("What is the smallest prime number?", "2", "number", "1", "two"),
    q("What is the next prime number after 7?", "11", "number", "9", "eleven"),
    q("How many centimetres are in a metre?", "100", "number", "1000"),
    q("How many metres are in a kilometre?", "1000", "number", "100", "1,000"),
    q("How many grams are in a kilogram?", "1000", "number", "100", "1,000"),
    q("How many millilitres are in a litre?", "1000", "number", "100", "1,000"),
    q("How many centimetres are in an inch?", "2.54", "number", "2.45"),
    q("How many inches are in a foot?", "12", "number", "10", "twelve"),
    q("How many feet are in a mile?", "5280", "number", "1760", "5,280"),
    q("How many yards are in a mile?", "1760", "number", "5280", "1,760"),
    q("How many kilometres are in a mile, to two decimal places?", "1.61", "number", "0.62"),
    q("How many ounces are in an avoirdupois pound?", "16", "number", "12", "sixteen"),
    q("How many seconds are in an hour?", "3600", "number", "360", "3,600"),
    q("How many minutes are in a day?", "1440", "number", "1400", "1,440"),
    q("How many hours are in a week?", "168", "number", "144"),
    q("How many days are in a leap year?", "366", "number", "365"),
    q("How many bits are in a byte?", "8", "number", "16", "eight"),
    q("How many zeros are in one million written in digits?", "6", "number", "9", "six"),
    q("How many sides does a hexagon have?", "6", "number", "8", "six"),
    q("How many degrees are in a right angle?", "90", "number", "180", "90°"),
    q("How many degrees do the interior angles of a triangle add up to?", "180", "number", "360",
      "180°"),
    q("What is 0 degrees Celsius in kelvin?", "273.15", "number", "-273.15", "273.15 K"),
    q("What is 100 degrees Celsius in degrees Fahrenheit?", "212", "number", "180", "212 °F"),
    q("Is 17 a prime number?", "Yes", "yes_no", "No"),
    q("Is 91 a prime number?", "No", "yes_no", "Yes"),
    q("Is one kilogram heavier than one pound?", "Yes", "yes_no", "No"),
)

LANGUAGE_AND_CULTURE = (
    q('Who wrote "Pride and Prejudice"?', "Jane Austen", "entity", "Charlotte Brontë", "Austen"),
    q('Who wrote "Romeo and Juliet"?', "William Shakespeare", "entity", "Christopher Marlowe",
      "Shakespeare"),
    q('Who wrote "War and Peace"?', "Leo Tolstoy", "entity", "Fyodor Dostoevsky", "Tolstoy",
      "Lev Tolstoy"),
    q('Who wrote "Don Quixote"?', "Miguel de Cervantes", "entity", "Lope de Vega", "Cervantes"),
    q('Who wrote "Nineteen Eighty-Four"?', "George Orwell", "entity", "Aldous Huxley", "Orwell"),
    q('Which ancient Greek poet is credited with "The Odyssey"?', "Homer", "entity", "Virgil"),
    q('Who wrote "One Hundred Years of Solitude"?', "Gabriel García Márquez", "entity",
      "Jorge Luis Borges", "García Márquez", "Gabriel Garcia Marquez"),
    q('Who wrote "The Divine Comedy"?', "Dante Alighieri", "entity", "Petrarch", "Dante"),
    q('Who wrote the novel "Frankenstein"?', "Mary Shelley", "entity", "Percy Bysshe Shelley",
      "Mary Wollstonecraft Shelley"),
    q('Who wrote "Moby-Dick"?', "Herman Melville", "entity", "Nathaniel Hawthorne", "Melville"),
    q("Who wrote the Harry Potter novels?", "J. K. Rowling", "entity", "J. R. R. Tolkien",
      "J.K. Rowling", "Rowling"),
    q("Who painted the Mona Lisa?", "Leonardo da Vinci", "entity", "Michelangelo", "Leonardo",
      "da Vinci"),
    q('Who painted "The Starry Night"?', "Vincent van Gogh", "entity", "Claude Monet", "van Gogh"),
    q("Who carved the marble David in Florence's Accademia gallery?", "Michelangelo", "entity",
      "Donatello", "Michelangelo Buonarroti"),
    q('Who composed the "Moonlight" Sonata?', "Ludwig van Beethoven", "entity",
      "Wolfgang Amadeus Mozart", "Beethoven"),
    q('Who composed the opera "The Magic Flute"?', "Wolfgang Amadeus Mozart", "entity",
      "Joseph Haydn", "Mozart"),
    q('Who directed the 1975 film "Jaws"?', "Steven Spielberg", "entity", "George Lucas",
      "Spielberg"),
    q("What is the official language of Brazil?", "Portuguese", "entity", "Spanish"),
    q("What are the two official languages of Canada?", "English and French", "short_phrase",
      "English and Spanish", "French and English"),
    q('What is the plural of "mouse"?', "mice", "entity", "mouses"),
    q('What is the past tense of the English verb "go"?', "went", "entity", "gone"),
    q('What is the French word for "cat"?', "chat", "entity", "chien"),
    q('What does the Spanish word "gracias" mean in English?', "thank you", "short_phrase",
      "please", "thanks"),
    q('What is the German word for "thank you"?', "danke", "entity", "bitte", "danke schön"),
    q("How many letters are in the English alphabet?", "26", "number", "24", "twenty-six"),
    q("What is the Japanese art of paper folding called?", "origami", "entity", "ikebana"),
    q("Who is the Greek god of the sea?", "Poseidon", "entity", "Neptune"),
    q("Who is the chief god in Norse mythology?", "Odin", "entity", "Thor", "Woden", "Wotan"),
    q("In Greek myth, who flew too close to the Sun on wings of wax?", "Icarus", "entity",
      "Daedalus"),
    q("Which keyboard instrument has 88 keys in its standard modern form?", "piano", "entity",
      "harpsichord", "the piano"),
    q("How many strings does a standard guitar have?", "6", "number", "4", "six"),
    q("What is the syllable pattern of a traditional haiku?", "5-7-5", "short_phrase", "7-5-7",
      "5, 7, 5"),
    q("What is the name of the school of wizardry in the Harry Potter books?", "Hogwarts", "entity",
      "Durmstrang", "Hogwarts School of Witchcraft and Wizardry"),
    q("Which Shakespeare play features the character Ophelia?", "Hamlet", "entity", "Macbeth"),
    q("Which hobbit carries the One Ring to Mordor?", "Frodo Baggins", "entity", "Bilbo Baggins",
      "Frodo"),
    q("What is the name of the Hindu festival of lights?", "Diwali", "entity", "Holi", "Deepavali"),
    q('Is "Les Misérables" a novel by Victor Hugo?', "Yes", "yes_no", "No"),
    q("Did Beethoven compose nine numbered symphonies?", "Yes", "yes_no", "No"),
    q('Is the word "kindergarten" of German origin?', "Yes", "yes_no", "No"),
    q('Was "The Great Gatsby" written by Ernest Hemingway?', "No", "yes_no", "Yes"),
)
# fmt: on

TOPICS: dict[str, tuple[Question, ...]] = {
    "geography": GEOGRAPHY,
    "science": SCIENCE,
    "history": HISTORY,
    "arithmetic_units": ARITHMETIC_UNITS,
    "language_and_culture": LANGUAGE_AND_CULTURE,
}
"""Every topic's rows, in the order the file interleaves them; each topic is a cohort."""


def generate() -> list[Example]:
    """Every row as an example, the topics interleaved, numbered ``qa-001``...

    Returns:
        The examples in file order.
    """
    tagged = [[(cohort, row) for row in rows] for cohort, rows in TOPICS.items()]
    interleaved = [pair for pair in chain.from_iterable(zip_longest(*tagged)) if pair]
    examples = []
    for number, (cohort, row) in enumerate(interleaved, start=1):
        metadata: dict[str, object] = {"kind": row.kind, "distractor": row.distractor}
        if row.accept:
            metadata["accept"] = list(row.accept)
        examples.append(
            Example(
                id=f"qa-{number:03d}",
                input={"question": row.question},
                expected=row.expected,
                cohort=cohort,
                metadata=metadata,
            )
        )
    return examples


def write_jsonl(examples: Sequence[Example], path: Path) -> None:
    """Write one JSON object per line, UTF-8, ``\\n`` line ends on every platform."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for example in examples:
            handle.write(json.dumps(example.canonical_dump(), ensure_ascii=False) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``--out`` and write the dataset."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output JSONL path")
    args = parser.parse_args(argv)
    examples = generate()
    write_jsonl(examples, args.out)
    print(f"wrote {len(examples)} examples to {args.out}")


if __name__ == "__main__":
    main()
