/**
 * Vocabulary for the mailbox generator: people, domains, subjects and sentences in several
 * languages (each language kept to characters its charset can carry). Data only.
 */

export const FIRST_NAMES = [
  'Alice',
  'Bob',
  'Carol',
  'David',
  'Erin',
  'Frank',
  'Grace',
  'Heidi',
  'Ivan',
  'Judy',
  'Mallory',
  'Niaj',
  'Olivia',
  'Peggy',
  'Rupert',
  'Sybil',
  'Trent',
  'Victor',
  'Walter',
  'Yasmin',
  'Zoë',
  'José',
  'Jürgen',
  'François',
  'Søren',
  'Ingrid',
  'Chloé',
  'Renée',
  'Björn',
  'Ahmed',
  'Priya',
  'Mei',
  'Kenji',
  'Olga',
  'Łukasz',
  'Dorota',
  'Ana',
  'Mateo',
  'Fatima',
  'Nikos',
  'Siobhán',
  'Tomás',
  'Hannah',
  'Liam',
  'Noah',
];

export const LAST_NAMES = [
  'Anderson',
  'Baker',
  'Clarke',
  'Dubois',
  'Evans',
  'Fischer',
  'García',
  'Hansen',
  'Ivanova',
  'Jensen',
  'Kowalski',
  'Lefèvre',
  'Müller',
  'Nakamura',
  'O’Brien',
  'Patel',
  'Quinn',
  'Rossi',
  'Schröder',
  'Tanaka',
  'Ueda',
  'Vasquez',
  'Weiß',
  'Xu',
  'Yilmaz',
  'Zimmermann',
  'Núñez',
  'Håkansson',
  'Papadopoulos',
  'Smith',
];

export const JAPANESE_NAMES = ['山田 太郎', '佐藤 花子', '鈴木 一郎', '高橋 直美', '田中 健', '伊藤 さくら'];

export const DOMAINS = [
  'example.org',
  'example.com',
  'example.net',
  'mail.example.org',
  'corp.example.com',
  'example.co.uk',
  'uni.example.edu',
  'shop.example',
  'startup.example.io',
  'example.de',
  'example.fr',
  'example.jp',
];

export const LISTS = [
  { name: 'project-dev', domain: 'lists.example.org', title: 'Project developers' },
  { name: 'announce', domain: 'lists.example.net', title: 'Announcements' },
  { name: 'users', domain: 'lists.example.com', title: 'User discussion' },
  { name: 'hiking-club', domain: 'groups.example.org', title: 'Weekend hiking club' },
];

export const NEWSLETTERS = [
  { name: 'Example Weekly', address: 'newsletter@news.example.com' },
  { name: 'Shop Deals', address: 'deals@shop.example' },
  { name: 'Release Notes', address: 'noreply@updates.example.net' },
];

export const SUBJECT_TOPICS = [
  'quarterly report',
  'meeting notes',
  'budget for next year',
  'project kickoff',
  'invoice {n}',
  'travel plans',
  'server migration',
  'contract draft',
  'holiday schedule',
  'design review',
  'lunch on Friday?',
  'release {n}.{m} candidate',
  'bug in the export feature',
  'welcome aboard',
  'your order #{n}',
  'slides for the talk',
  'question about the API',
  'weekly status',
  'offsite agenda',
  'password policy update',
  'hiring plan',
  'customer feedback',
  'photos from the trip',
  'rent and utilities',
  'conference registration',
  'draft blog post',
  'on-call rotation',
  'database backup failed',
];

export const WORDS = (
  'the a of to and in that is for it with as was on be at by this we you from or have an they which ' +
  'one had not but what all were when there can more if out so up said about than them into some could ' +
  'time would other only new also after first two year work people way back because good most find ' +
  'report meeting project budget schedule customer team plan review release server data update ' +
  'deadline invoice contract proposal agenda feedback draft version change issue support account ' +
  'please thanks attached below above tomorrow today week month quarter morning afternoon office ' +
  'remote call discuss confirm check send share follow available possible important quick final'
).split(' ');

export const GERMAN = [
  'Vielen Dank für die schnelle Rückmeldung.',
  'Können wir das Treffen auf nächste Woche verschieben?',
  'Die Unterlagen für das Gespräch liegen im Anhang.',
  'Grüße aus München und ein schönes Wochenende.',
  'Ich würde gern die offenen Punkte klären, bevor wir weitermachen.',
  'Die Größe der Datei überschreitet leider das Limit.',
];

export const FRENCH = [
  'Merci pour votre réponse rapide.',
  'Pourriez-vous me confirmer la date de la réunion ?',
  'Vous trouverez ci-joint le document révisé.',
  'Je reste à votre disposition pour toute question complémentaire.',
  'Le déjeuner de l’équipe aura lieu à midi, près de la gare.',
  'Très bonne journée à vous, à bientôt.',
];

export const SPANISH = [
  '¿Podemos revisar el presupuesto mañana?',
  'Adjunto la presentación para la reunión del jueves.',
  'Muchas gracias por tu ayuda con la migración.',
  'El año pasado el equipo creció bastante.',
];

/** English with the punctuation windows-1252 adds over Latin-1. */
export const CP1252_ENGLISH = [
  'That’s “exactly” what we agreed – thanks for writing it down…',
  'The price is €1,200 — not €1,500 as the first quote said.',
  'We’ll need the ‘final’ version by Friday • no later.',
  'Björn’s slides™ are in the shared folder.',
];

export const JAPANESE = [
  'お世話になっております。',
  '会議の資料を送付いたします。',
  '来週の打ち合わせについてご確認ください。',
  '添付ファイルをご確認ください。',
  '本日の進捗を報告します。',
  '日程の調整をお願いできますでしょうか。',
  'ご質問があればお知らせください。',
  'よろしくお願いいたします。',
];

export const JAPANESE_SUBJECTS = ['打ち合わせの件', '資料送付のお知らせ', '来週の予定について', '見積書の確認'];

/** UTF-8 only: scripts and symbols no legacy charset here carries. */
export const UTF8_EXTRA = [
  'Спасибо за письмо, увидимся на встрече.',
  'Καλημέρα, το αρχείο είναι συνημμένο.',
  '我们下周二开会讨论这个问题。',
  'Congrats on the launch 🎉 — great work everyone 🚀',
  'Zażółć gęślą jaźń: test of Polish letters.',
  'Ünïcödé everywhere: naïve café, smörgåsbord, crème brûlée.',
];

export const SIGNATURES = ['Best regards,', 'Cheers,', 'Thanks,', 'Kind regards,', 'Viele Grüße,', 'Cordialement,', 'Saludos,', '--'];

export const MAILERS = [
  'Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Thunderbird/115.6.0',
  'Microsoft Outlook 16.0',
  'Apple Mail (2.3731.700.6)',
  'Roundcube Webmail/1.6.5',
  'Evolution 3.46.4',
  'K-9 Mail for Android',
];

/** Two adjacent words of a subject topic, each of four letters or more, lowercased: phrases the generated subjects hold (benchmarks query them). */
export function subjectBigrams(): string[] {
  const pairs = SUBJECT_TOPICS.flatMap((topic) => {
    const words = topic
      .toLowerCase()
      .split(/[^a-z]+/)
      .filter((w) => w !== '');
    return words
      .slice(1)
      .map((w, i) => [words[i]!, w] as const)
      .filter(([a, b]) => a.length >= 4 && b.length >= 4)
      .map(([a, b]) => `${a} ${b}`);
  });
  return [...new Set(pairs)];
}
