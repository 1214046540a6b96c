//! The fact templates of the labelled set: a statement an agent would store about a person,
//! and three questions about it — one that shares the statement's key words (*lexical*), one
//! that asks the same thing in other words (*paraphrase*), and one that gives a value the
//! statement holds (a door code, a plate, a surname) and asks whose it is (*value*: the lookups
//! an agent makes by reference). `{p}` is the person; the other slots take a value from
//! [`SLOTS`].

/// One template: statement, lexical question, paraphrased question.
pub struct Template {
    /// What is stored.
    pub fact: &'static str,
    /// A question with the statement's key words.
    pub lexical: &'static str,
    /// The same question in other words.
    pub paraphrase: &'static str,
    /// A question that gives a stored value (a code, a name, a number) and asks whose it is.
    pub value: &'static str,
}

macro_rules! t {
    ($f:expr, $l:expr, $p:expr, $v:expr) => {
        Template {
            fact: $f,
            lexical: $l,
            paraphrase: $p,
            value: $v,
        }
    };
}

/// The templates.
pub const TEMPLATES: &[Template] = &[
    t!(
        "{p}'s dentist is Dr. {surname}, at the clinic on {street}.",
        "Who is {p}'s dentist?",
        "Which doctor takes care of {p}'s teeth?",
        "Who goes to the clinic on {street} to see Dr. {surname}?"
    ),
    t!(
        "{p} is allergic to {allergen}.",
        "What is {p} allergic to?",
        "Is there anything that gives {p} a bad bodily reaction?",
        "Who is allergic to {allergen}?"
    ),
    t!(
        "The wifi password at {p}'s home is {password}.",
        "What is the wifi password at {p}'s home?",
        "How do I get online at {p}'s house?",
        "Whose home wifi uses the password {password}?"
    ),
    t!(
        "{p}'s flight to {city} leaves on {weekday} at {time}.",
        "When does {p}'s flight to {city} leave?",
        "At what time is {p} flying out?",
        "Who is on the {weekday} {time} flight to {city}?"
    ),
    t!(
        "{p} pays {amount} euros rent each month to the landlord, {surname}.",
        "How much rent does {p} pay?",
        "What does {p}'s flat cost per month?",
        "Who pays rent to {surname}?"
    ),
    t!(
        "{p}'s favourite cuisine is {cuisine}.",
        "What is {p}'s favourite cuisine?",
        "Which kind of food does {p} enjoy most?",
        "Who loves {cuisine} food most?"
    ),
    t!(
        "{p} works as a {job} at {company}.",
        "Where does {p} work?",
        "Who employs {p}, and in what role?",
        "Who is a {job} at {company}?"
    ),
    t!(
        "{p}'s daughter {child} goes to {school} school.",
        "Which school does {p}'s daughter go to?",
        "Where does {p}'s kid study?",
        "Whose daughter is {child}?"
    ),
    t!(
        "{p}'s car is a {color} {carmodel} with the plate {plate}.",
        "What car does {p} have?",
        "Which vehicle does {p} drive?",
        "Who owns the car with the plate {plate}?"
    ),
    t!(
        "{p} has a gym membership at {gym}; it is cancelled by writing to {email}.",
        "How can {p} cancel the gym membership?",
        "Whom should {p} contact to stop paying for fitness classes?",
        "Whose gym membership is cancelled through {email}?"
    ),
    t!(
        "{p}'s bank account IBAN is {iban}.",
        "What is {p}'s IBAN?",
        "Which account number should money for {p} be sent to?",
        "Whose IBAN is {iban}?"
    ),
    t!(
        "{p} takes {medication} every morning for blood pressure.",
        "What medication does {p} take for blood pressure?",
        "Which pills does {p} need daily for the heart?",
        "Who takes {medication}?"
    ),
    t!(
        "{p}'s birthday is on {date}.",
        "When is {p}'s birthday?",
        "On what day was {p} born?",
        "Whose birthday is {date}?"
    ),
    t!(
        "{p} prefers {seat} seats on planes.",
        "Which seats does {p} prefer on planes?",
        "Where does {p} like to sit when flying?",
        "Who wants {seat} seats on planes?"
    ),
    t!(
        "{p}'s manager is {manager}, who approves the travel expenses.",
        "Who is {p}'s manager?",
        "Who is {p}'s boss at work?",
        "Who reports to {manager}?"
    ),
    t!(
        "{p}'s passport expires in {month} {year}.",
        "When does {p}'s passport expire?",
        "Until when is {p}'s travel document valid?",
        "Whose passport runs out in {month} {year}?"
    ),
    t!(
        "{p} speaks {language} fluently.",
        "Which language does {p} speak fluently?",
        "What foreign tongue has {p} mastered?",
        "Who is fluent in {language}?"
    ),
    t!(
        "The door code for {p}'s building is {code}.",
        "What is the door code for {p}'s building?",
        "How do I get into {p}'s apartment block?",
        "Whose building opens with the code {code}?"
    ),
    t!(
        "{p}'s cat is called {petname} and eats only {catfood}.",
        "What is the name of {p}'s cat?",
        "What is {p}'s pet called?",
        "Whose cat is {petname}?"
    ),
    t!(
        "{p} is learning to play the {instrument} on Thursdays.",
        "Which instrument is {p} learning to play?",
        "What music lessons does {p} take?",
        "Who takes {instrument} lessons?"
    ),
    t!(
        "{p}'s electricity contract with {utility} renews on {date}.",
        "When does {p}'s electricity contract renew?",
        "When is {p}'s power supplier agreement up for renewal?",
        "Who has an electricity contract with {utility}?"
    ),
    t!(
        "{p} ran the {city} marathon in {hours} hours.",
        "How long did {p} take for the marathon?",
        "What was {p}'s finishing time in the long-distance race?",
        "Who finished the {city} marathon in {hours} hours?"
    ),
    t!(
        "{p}'s insurance policy number is {policy}, with {insurer}.",
        "What is {p}'s insurance policy number?",
        "Which reference identifies {p}'s cover?",
        "Whose policy is {policy}?"
    ),
    t!(
        "{p} has not eaten meat since {year}.",
        "Since when has {p} not eaten meat?",
        "Is {p} a vegetarian?",
        "Who stopped eating meat in {year}?"
    ),
    t!(
        "{p}'s plumber is {surname}, reachable at {phone}.",
        "What is the phone number of {p}'s plumber?",
        "Who can fix a leaking pipe at {p}'s place?",
        "Whose plumber can be called at {phone}?"
    ),
    t!(
        "{p} parks the bike in the basement of {street}.",
        "Where does {p} park the bike?",
        "Where is {p}'s bicycle kept?",
        "Who keeps a bike at {street}?"
    ),
    t!(
        "{p}'s book club meets on the first {weekday} of the month at {cafe}.",
        "When does {p}'s book club meet?",
        "When do {p} and the reading group get together?",
        "Whose book club meets at {cafe}?"
    ),
    t!(
        "{p}'s sister {sibling} lives in {city}.",
        "Where does {p}'s sister live?",
        "In which town is {p}'s sibling based?",
        "Whose sister is {sibling}?"
    ),
    t!(
        "{p} asks for a {table} table when booking a restaurant.",
        "What table does {p} ask for when booking a restaurant?",
        "Where does {p} like to be seated when dining out?",
        "Who wants a {table} table at restaurants?"
    ),
    t!(
        "{p}'s laptop is a {laptop} bought in {year}.",
        "Which laptop does {p} have?",
        "What computer does {p} use?",
        "Who owns a {laptop}?"
    ),
    t!(
        "{p} must renew the residence permit at the {office} office before {date}.",
        "When must {p} renew the residence permit?",
        "What is {p}'s deadline for the visa paperwork?",
        "Who has to go to the {office} office about a residence permit?"
    ),
    t!(
        "{p}'s dog walker, {surname}, comes at {time} on weekdays.",
        "When does {p}'s dog walker come?",
        "At what hour is {p}'s puppy taken out?",
        "Whose dog walker is {surname}?"
    ),
    t!(
        "{p} donates {amount} euros a month to {charity}.",
        "Which charity does {p} donate to?",
        "Which good cause does {p} support financially?",
        "Who gives money to {charity}?"
    ),
    t!(
        "{p} was told by the doctor to avoid {food}.",
        "Which food should {p} avoid?",
        "What is {p} not supposed to eat on medical advice?",
        "Who must avoid {food}?"
    ),
    t!(
        "{p} keeps the spare house key with the neighbour, {surname}.",
        "Who has {p}'s spare house key?",
        "If {p} gets locked out, who can let them in?",
        "Who left a spare key with {surname}?"
    ),
    t!(
        "{p}'s mobile phone number is {phone}.",
        "What is {p}'s mobile phone number?",
        "How can I call {p}?",
        "Whose mobile number is {phone}?"
    ),
    t!(
        "{p}'s favourite football team is {team}.",
        "Which football team does {p} support?",
        "Which club is {p} a fan of?",
        "Who supports {team}?"
    ),
    t!(
        "{p} is saving for a trip to {country} next {season}.",
        "Where is {p} saving for a trip to?",
        "Which holiday destination is {p} putting money aside for?",
        "Who is saving for {country}?"
    ),
    t!(
        "{p}'s yoga class is on {weekday} evenings at {studio}.",
        "When is {p}'s yoga class?",
        "On which evening does {p} stretch and meditate?",
        "Who practises yoga at {studio}?"
    ),
    t!(
        "{p}'s accountant, {surname}, files the tax return every {month}.",
        "Who files {p}'s tax return?",
        "Who does {p}'s taxes?",
        "Whose taxes does {surname} file?"
    ),
];

/// The people the facts are about.
pub const PEOPLE: &[&str] = &[
    "Alice", "Bruno", "Chen", "Dara", "Emeka", "Farah", "Giulia", "Hiro", "Ingrid", "Jamal",
    "Kasia", "Lucas", "Mariam", "Nils", "Olu", "Paola", "Quentin", "Rania", "Sven", "Tereza",
    "Umar", "Vera", "Wen", "Ximena",
];

/// The values of each slot.
pub const SLOTS: &[(&str, &[&str])] = &[
    (
        "surname",
        &[
            "Okafor",
            "Lindqvist",
            "Moreau",
            "Tanaka",
            "Kowalski",
            "Haddad",
            "Brennan",
            "Alvarez",
            "Novak",
            "Ferreira",
        ],
    ),
    (
        "street",
        &[
            "Linden Street",
            "Harbour Road",
            "Elm Avenue",
            "Castle Lane",
            "Mill Street",
            "Station Road",
        ],
    ),
    (
        "allergen",
        &[
            "peanuts",
            "penicillin",
            "shellfish",
            "bee stings",
            "latex",
            "pollen",
        ],
    ),
    (
        "password",
        &[
            "sunflower-42",
            "blue-kettle-7",
            "orchard#19",
            "maple-tree-88",
            "quiet-harbor-3",
            "violet-ridge-5",
        ],
    ),
    (
        "city",
        &["Lisbon", "Oslo", "Nairobi", "Montreal", "Seoul", "Valencia"],
    ),
    (
        "weekday",
        &[
            "Monday",
            "Tuesday",
            "Wednesday",
            "Thursday",
            "Friday",
            "Saturday",
        ],
    ),
    (
        "time",
        &["7:40", "9:15", "13:05", "16:30", "18:45", "21:10"],
    ),
    ("amount", &["850", "1,120", "640", "1,450", "975", "30"]),
    (
        "cuisine",
        &[
            "Ethiopian",
            "Georgian",
            "Peruvian",
            "Sichuan",
            "Lebanese",
            "Sardinian",
        ],
    ),
    (
        "job",
        &[
            "nurse",
            "architect",
            "data analyst",
            "carpenter",
            "teacher",
            "pharmacist",
        ],
    ),
    (
        "company",
        &[
            "Northwind Logistics",
            "Helios Energy",
            "Brightpath Clinics",
            "Orbital Foods",
            "Keystone Bank",
            "Lumen Studio",
        ],
    ),
    ("child", &["Mia", "Noor", "Leo", "Ines", "Tomas", "Yara"]),
    (
        "school",
        &[
            "Riverside",
            "Oakfield",
            "St. Anne's",
            "Hillcrest",
            "Northgate",
            "Westbrook",
        ],
    ),
    (
        "color",
        &["red", "silver", "dark blue", "white", "green", "black"],
    ),
    (
        "carmodel",
        &[
            "Skoda Octavia",
            "Toyota Yaris",
            "Volvo V60",
            "Fiat Panda",
            "Renault Zoe",
            "Kia Niro",
        ],
    ),
    (
        "plate",
        &[
            "B-KL 4821",
            "M-TR 119",
            "HH-QA 7002",
            "K-ZE 3310",
            "F-OP 915",
            "S-RU 6248",
        ],
    ),
    (
        "gym",
        &[
            "FitHub",
            "IronWorks",
            "Pulse Gym",
            "CoreZone",
            "Atlas Fitness",
            "MoveWell",
        ],
    ),
    (
        "email",
        &[
            "billing@fithub.example",
            "members@ironworks.example",
            "cancel@pulse.example",
            "help@corezone.example",
            "office@atlasfit.example",
            "support@movewell.example",
        ],
    ),
    (
        "iban",
        &[
            "DE89 3704 0044 0532 0130 00",
            "FR76 3000 6000 0112 3456 7890 189",
            "NL91 ABNA 0417 1643 00",
            "ES91 2100 0418 4502 0005 1332",
            "IT60 X054 2811 1010 0000 0123 456",
            "BE68 5390 0754 7034",
        ],
    ),
    (
        "medication",
        &[
            "lisinopril",
            "amlodipine",
            "losartan",
            "bisoprolol",
            "ramipril",
            "valsartan",
        ],
    ),
    (
        "date",
        &[
            "the 3rd of March",
            "the 17th of June",
            "the 29th of October",
            "the 11th of January",
            "the 22nd of August",
            "the 5th of December",
        ],
    ),
    (
        "seat",
        &[
            "aisle",
            "window",
            "exit-row",
            "front-row",
            "bulkhead",
            "middle",
        ],
    ),
    (
        "manager",
        &[
            "Priya Raman",
            "Jonas Weber",
            "Grace Mensah",
            "Luca Bianchi",
            "Sofia Petrova",
            "Omar Farouk",
        ],
    ),
    (
        "month",
        &["January", "April", "May", "July", "September", "November"],
    ),
    ("year", &["2019", "2021", "2027", "2028", "2016", "2030"]),
    (
        "language",
        &[
            "Portuguese",
            "Korean",
            "Swahili",
            "Finnish",
            "Arabic",
            "Polish",
        ],
    ),
    ("code", &["4471", "0925", "8310", "2264", "5098", "7613"]),
    (
        "petname",
        &["Miso", "Biscuit", "Pepper", "Luna", "Socks", "Mango"],
    ),
    (
        "catfood",
        &[
            "salmon pate",
            "dry kibble",
            "chicken chunks",
            "tuna flakes",
            "duck mousse",
            "rabbit stew",
        ],
    ),
    (
        "instrument",
        &["cello", "trumpet", "piano", "violin", "drums", "saxophone"],
    ),
    (
        "utility",
        &[
            "Vattenfall",
            "EnBW",
            "Octopus",
            "Iberdrola",
            "Enel",
            "Engie",
        ],
    ),
    ("hours", &["3.5", "4", "4.25", "3.75", "5", "4.5"]),
    (
        "policy",
        &[
            "HX-220-981",
            "QP-771-403",
            "LM-918-266",
            "TR-305-550",
            "ZK-662-117",
            "WB-443-809",
        ],
    ),
    (
        "insurer",
        &["Allianz", "AXA", "Generali", "Zurich", "Aviva", "Mapfre"],
    ),
    (
        "phone",
        &[
            "+49 151 2233 4455",
            "+33 6 12 34 56 78",
            "+31 6 8765 4321",
            "+34 612 345 678",
            "+39 347 123 4567",
            "+32 470 12 34 56",
        ],
    ),
    (
        "cafe",
        &[
            "Cafe Aurora",
            "The Reading Room",
            "Bean & Leaf",
            "Kaffeehaus Adler",
            "Cafe Mistral",
            "The Owl",
        ],
    ),
    ("sibling", &["Hana", "Rosa", "Mei", "Ada", "Zainab", "Elif"]),
    (
        "table",
        &[
            "window",
            "quiet corner",
            "terrace",
            "booth",
            "bar-side",
            "garden",
        ],
    ),
    (
        "laptop",
        &[
            "ThinkPad X1",
            "MacBook Air",
            "Dell XPS 13",
            "Framework 13",
            "HP EliteBook",
            "Surface Laptop",
        ],
    ),
    (
        "office",
        &[
            "Mitte",
            "Kreuzberg",
            "Altona",
            "Schwabing",
            "Neustadt",
            "Ehrenfeld",
        ],
    ),
    (
        "charity",
        &[
            "Doctors Without Borders",
            "the Red Cross",
            "Oxfam",
            "WWF",
            "UNICEF",
            "the local food bank",
        ],
    ),
    (
        "food",
        &[
            "grapefruit",
            "liquorice",
            "raw oysters",
            "aged cheese",
            "fried food",
            "red meat",
        ],
    ),
    (
        "team",
        &[
            "Benfica",
            "Celtic",
            "Ajax",
            "Napoli",
            "Galatasaray",
            "Boca Juniors",
        ],
    ),
    (
        "country",
        &[
            "Japan",
            "Chile",
            "Iceland",
            "Morocco",
            "Vietnam",
            "New Zealand",
        ],
    ),
    (
        "season",
        &["spring", "summer", "autumn", "winter", "spring", "summer"],
    ),
    (
        "studio",
        &[
            "Lotus Studio",
            "Om Space",
            "Flow House",
            "Sun Salute",
            "Still Point",
            "Blue Mat",
        ],
    ),
];
